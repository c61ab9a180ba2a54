import { readdirSync, readFileSync } from 'node:fs';
import { expect } from 'vitest';

/**
 * Asserts that `run` takes time linear in its input, not a backtracking regular expression's or a quadratic loop's:
 * the input of 4n characters must take under 8x the time of n's (a quadratic one takes ~16x). The time is CPU time
 * (cpuMs), not the wall clock, so that what else a busy machine runs does not count (a CI run failed on the wall
 * clock's); the two sizes take turns, three runs each, the least of each kept, and n's counts as at least `floorMs`,
 * so that noise on tiny times does not count. The inputs were seconds before their fixes (docs/architecture.md,
 * hostile input).
 */
export async function expectLinear(
  make: (n: number) => string,
  run: (text: string) => unknown,
  { n = 8_000, floorMs = 10 }: { n?: number; floorMs?: number } = {},
): Promise<void> {
  const texts = [make(n), make(4 * n)] as const;
  const least = [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY];
  for (let i = 0; i < 6; i++) {
    const before = cpuMs();
    await run(texts[i % 2]!);
    least[i % 2] = Math.min(least[i % 2]!, cpuMs() - before);
  }
  const [small, large] = least as [number, number];
  expect(large, `CPU time at 4n: ${large.toFixed(1)} ms, n: ${small.toFixed(1)} ms`).toBeLessThan(
    8 * Math.max(small, floorMs),
  );
}

/**
 * This process's CPU time in ms, with its child processes' (an uploaded file is read in one: ingest/reader.ts): those
 * running from /proc, those ended as this process's children's time (clock ticks of 10 ms). Without /proc, this
 * process's alone.
 */
function cpuMs(): number {
  const own = process.cpuUsage();
  let ticks = 0;
  try {
    // The fields after the command's closing parenthesis: [1] ppid, [11] utime, [12] stime, [13] cutime, [14] cstime.
    const stats = new Map<number, number[]>();
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const text = readFileSync(`/proc/${name}/stat`, 'utf8');
        stats.set(
          Number(name),
          text
            .slice(text.lastIndexOf(')') + 2)
            .split(' ')
            .map(Number),
        );
      } catch {} // ended meanwhile
    }
    const self = stats.get(process.pid);
    if (self) ticks += self[13]! + self[14]!;
    const mine = new Set([process.pid]);
    for (let grew = true; grew; ) {
      grew = false;
      for (const [pid, fields] of stats)
        if (!mine.has(pid) && mine.has(fields[1]!)) {
          mine.add(pid);
          ticks += fields[11]! + fields[12]! + fields[13]! + fields[14]!;
          grew = true;
        }
    }
  } catch {} // no /proc
  return (own.user + own.system) / 1000 + ticks * 10;
}
