'use strict';
module.exports = { ...require('./cart.js'), ...require('./checkout.js') };
