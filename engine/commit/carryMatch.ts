// The order-preserving greedy match of the in-place commit (SPEC §13.2 step 1), in linear time.
//
// For each output message m (in order) the spec takes the smallest unmatched old row r ≥ p whose wire fields equal
// m's, then sets p = r + 1. Every row before p is out of reach for good, so "unmatched and ≥ p" is simply "≥ p":
// one ascending queue of row indexes per key, whose head only moves forward, gives the same answer.

/** `carriedBy[i]` = index of the old row that carries output message i, or -1 when message i is new. */
export function matchCarriedRows(oldKeys: readonly string[], newKeys: readonly string[]): number[] {
  const queues = new Map<string, { rows: number[]; head: number }>();
  oldKeys.forEach((key, index) => {
    const queue = queues.get(key);
    if (queue) queue.rows.push(index);
    else queues.set(key, { rows: [index], head: 0 });
  });

  let pointer = 0;
  return newKeys.map((key) => {
    const queue = queues.get(key);
    if (!queue) return -1;
    while (queue.head < queue.rows.length && (queue.rows[queue.head] as number) < pointer) queue.head++;
    const row = queue.rows[queue.head];
    if (row === undefined) return -1;
    queue.head++;
    pointer = row + 1;
    return row;
  });
}
