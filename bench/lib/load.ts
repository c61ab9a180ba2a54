/** A closed-loop load generator: `concurrency` clients each sending requests back to back. */

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  per_second: number;
  p50_ms: number;
  p99_ms: number;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function runLoad(
  total: number,
  concurrency: number,
  send: (i: number, client: number) => Promise<boolean>,
): Promise<LoadResult> {
  const latencies: number[] = [];
  let next = 0;
  let errors = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, client) => {
      for (let i = next++; i < total; i = next++) {
        const t0 = performance.now();
        const ok = await send(i, client);
        latencies.push(performance.now() - t0);
        if (!ok) errors++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 100) / 100;
  return {
    requests: total,
    errors,
    seconds: round(seconds),
    per_second: round(total / seconds),
    p50_ms: round(percentile(latencies, 50)),
    p99_ms: round(percentile(latencies, 99)),
  };
}
