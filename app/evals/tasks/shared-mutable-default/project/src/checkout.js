'use strict';
const { itemCount } = require('./cart.js');

/** What the checkout page shows for a cart, given the price of each sku in cents. */
function checkoutSummary(cart, prices) {
  const totalCents = cart.items.reduce((sum, item) => sum + prices[item.sku] * item.quantity, 0);
  return { owner: cart.owner, items: itemCount(cart), totalCents };
}

module.exports = { checkoutSummary };
