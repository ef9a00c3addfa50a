/** Agent logs and device event logs are inserted 100 rows per statement. */
export const insertBatchSize = 100;

/** The items in consecutive batches of `insertBatchSize`, each with the index of its first item. */
export function batchesOf<T>(items: readonly T[]): { first: number; items: T[] }[] {
  const batches: { first: number; items: T[] }[] = [];
  for (let first = 0; first < items.length; first += insertBatchSize)
    batches.push({ first, items: items.slice(first, first + insertBatchSize) });
  return batches;
}
