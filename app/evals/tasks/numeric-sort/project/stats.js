// Summary statistics for the latency report (response times in milliseconds).

/** The middle value; for an even count, the mean of the two middle values. */
export function median(values) {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort();
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** The `n` largest values, largest first. */
export function slowest(values, n) {
  return [...values].sort().reverse().slice(0, n);
}
