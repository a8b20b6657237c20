import { median, slowest } from './stats.js';

/** One line of the daily latency report. */
export function reportLine(endpoint, timings) {
  return `${endpoint}: median ${median(timings)} ms, slowest ${slowest(timings, 3).join(', ')} ms`;
}
