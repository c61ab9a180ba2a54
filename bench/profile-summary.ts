/**
 * Self time per function of a V8 CPU profile (`--cpu-prof`, or `bench/lib/profile.ts`'s files): each sample's
 * interval charged to the function it was in, summed by name and source position, largest first, with each one's
 * share of the profile; `--lines` also the hottest source lines (positions are those of the code V8 ran: through
 * tsx, the transpiled lines). JSON lines.
 *
 *   node --import tsx bench/profile-summary.ts FILE.cpuprofile [--top 30] [--lines]
 */
import { readFileSync } from 'node:fs';
import { option } from './lib/args.js';

type Node = {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  positionTicks?: { line: number; ticks: number }[];
};
const file = process.argv[2];
if (!file) throw new Error('usage: profile-summary.ts FILE.cpuprofile [--top N] [--lines]');
const top = Number(option('--top') ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8')) as {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
};
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const name = (n: Node) =>
  `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').slice(-1)[0]}:${n.callFrame.lineNumber + 1}`;
const selfMs = new Map<string, number>();
let total = 0;
profile.samples.forEach((id, i) => {
  const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
  const key = name(byId.get(id)!);
  selfMs.set(key, (selfMs.get(key) ?? 0) + ms);
  total += ms;
});
const round = (x: number) => Math.round(x * 10) / 10;
for (const [fn, ms] of [...selfMs].sort((a, b) => b[1] - a[1]).slice(0, top))
  console.log(JSON.stringify({ fn, self_ms: round(ms), share: round((ms / total) * 100) }));
if (process.argv.includes('--lines')) {
  const ticks = new Map<string, number>();
  let all = 0;
  for (const n of profile.nodes)
    for (const p of n.positionTicks ?? []) {
      const key = `${n.callFrame.url.split('/').slice(-1)[0]}:${p.line}`;
      ticks.set(key, (ticks.get(key) ?? 0) + p.ticks);
      all += p.ticks;
    }
  for (const [line, t] of [...ticks].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(JSON.stringify({ line, share: round((t / all) * 100) }));
}
console.log(JSON.stringify({ total_ms: round(total) }));
