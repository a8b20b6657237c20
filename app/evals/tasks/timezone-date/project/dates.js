'use strict';
// Due dates are calendar days ("2026-12-01") in the user's own time zone.

/** The calendar day of `date` where the user is (the process's time zone), as "YYYY-MM-DD". */
function localDay(date) {
  return date.toISOString().slice(0, 10);
}

/** Whether a task due on `day` is overdue at `now`: only once that day is over. */
function isOverdue(day, now) {
  return day < localDay(now);
}

module.exports = { localDay, isOverdue };
