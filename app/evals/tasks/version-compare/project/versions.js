'use strict';
// Decides whether a plugin is out of date, from version strings like "1.4.2".

/** -1, 0 or 1 as version `a` is older than, the same as, or newer than version `b`. */
function compareVersions(a, b) {
  if (a === b) return 0;
  return a < b ? -1 : 1;
}

/** Whether the installed version is older than the latest one. */
function needsUpdate(installed, latest) {
  return compareVersions(installed, latest) < 0;
}

module.exports = { compareVersions, needsUpdate };
