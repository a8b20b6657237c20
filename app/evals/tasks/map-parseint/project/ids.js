'use strict';

/** The ids in a query parameter like "ids=3,14,15": [3, 14, 15]. Blank entries are skipped. */
function parseIds(param) {
  return param
    .split(',')
    .filter((part) => part.trim() !== '')
    .map(parseInt);
}

module.exports = { parseIds };
