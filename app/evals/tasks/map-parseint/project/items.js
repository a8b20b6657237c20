'use strict';
const { parseIds } = require('./ids.js');

/** GET /items?ids=…: the catalog items with those ids, in the order asked for. */
function itemsFor(query, catalog) {
  return parseIds(query.ids ?? '')
    .map((id) => catalog.find((item) => item.id === id))
    .filter((item) => item !== undefined);
}

module.exports = { itemsFor };
