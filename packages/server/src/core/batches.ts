/**
 * Runs a batched delete (one statement or transaction that removes at most `batch` rows and answers
 * how many) until a batch comes back short: retention that never holds locks on a whole table at once.
 * Answers how many rows went in all.
 */
export async function deleteInBatches(batch: number, deleteBatch: () => Promise<number>): Promise<number> {
  let deleted = 0;
  for (;;) {
    const n = await deleteBatch();
    deleted += n;
    if (n < batch) return deleted;
  }
}
