'use strict';
const { needsUpdate } = require('./versions.js');

/** The names of the installed plugins that have a newer release, for the "updates" badge. */
function outdated(installed, releases) {
  return Object.keys(installed).filter((name) => name in releases && needsUpdate(installed[name], releases[name]));
}

module.exports = { outdated };
