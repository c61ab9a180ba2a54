/**
 * Two shards on two threads (issue 51, session 14, helper "shards"): one end user's index split by session,
 * shard 0 searched on this thread and shard 1 on a worker, rank-search.ts's phases (first pass, expansion,
 * offers) run on both at once with what is global merged between them; the worker's phases are asked and
 * answered through a MessageChannel read synchronously (receiveMessageOnPort) behind an Atomics flag each way,
 * both sides spinning. Against the whole index on this thread, blocks alternated; answers compared.
 *
 *   node --expose-gc --import tsx bench/scratch-shards/threads.ts [--docs 300000] [--queries 400] [--rounds 3]
 */
import { fileURLToPath } from 'node:url';
import {
  isMainThread,
  MessageChannel,
  type MessagePort,
  receiveMessageOnPort,
  Worker,
  workerData,
} from 'node:worker_threads';
import type { Bm25Field, FieldStats } from '../../packages/server/src/engine/bm25.js';
import { type EngineDoc, MemoryIndex } from '../../packages/server/src/engine/index.js';
import { queryTerms } from '../../packages/server/src/engine/rank.js';
import {
  expansionTerms,
  type ExpansionReport,
  type FirstReport,
  merged,
  type Ranked,
  ShardSearch,
  type Whole,
  wholeOf,
} from '../../packages/server/src/engine/rank-search.js';
import { SearchBuffers } from '../../packages/server/src/engine/search-buffers.js';
import type { SearchHit } from '../../packages/server/src/engine/types.js';
import { option } from '../lib/args.js';
import { bigUserRows } from '../lib/big-user-rows.js';

type Row = EngineDoc;
type Summary = { docs: number; totalLen: number; dfs: [string, number][] };
const build = (rs: Row[]) => {
  const ix = new MemoryIndex({});
  for (const r of rs) ix.upsert(r);
  ix.fit();
  return ix;
};
const summary = (f: Bm25Field): Summary => ({ docs: f.docCount, totalLen: f.ownTotalLen, dfs: [...f.ownDfs()] });
/** This shard's field with the other's summary: the whole's statistics. */
function join(f: Bm25Field, other: Summary): void {
  const dfs = new Map(other.dfs);
  const stats: FieldStats = {
    docs: f.docCount + other.docs,
    totalLen: f.ownTotalLen + other.totalLen,
    df: (t) => f.ownDf(t) + (dfs.get(t) ?? 0),
  };
  f.stats = stats;
}
/** A channel's side: posts, bumps its flag; reads once the other's flag moved. */
class Line {
  private sent = 0;
  private got = 0;
  constructor(
    private readonly port: MessagePort,
    private readonly flags: Int32Array,
    private readonly mine: number,
  ) {}
  send(m: unknown): void {
    this.port.postMessage(m);
    Atomics.store(this.flags, this.mine, ++this.sent);
    Atomics.notify(this.flags, this.mine);
  }
  receive<T>(spinMs = Infinity): T {
    const theirs = 1 - this.mine;
    const until = performance.now() + spinMs;
    while (Atomics.load(this.flags, theirs) === this.got) {
      if (performance.now() > until) Atomics.wait(this.flags, theirs, this.got, 1000);
    }
    this.got++;
    return receiveMessageOnPort(this.port)!.message as T;
  }
}

if (!isMainThread) {
  const { rows, port, flags, now } = workerData as { rows: Row[]; port: MessagePort; flags: Int32Array; now: number };
  const line = new Line(port, flags, 1);
  const ix = build(rows);
  line.send([summary(ix.fields.text), summary(ix.fields.meta)]);
  const [text, meta] = line.receive<Summary[]>();
  join(ix.fields.text, text!);
  join(ix.fields.meta, meta!);
  line.send('ready');
  const b = SearchBuffers.forSlots(ix.size);
  for (;;) {
    const m = line.receive<{ query: string; k: number; explain: boolean } | null>(2);
    if (m === null) break;
    const opts = { k: m.k, now, explain: m.explain };
    const r = ix.ranked(b, 0);
    const s = new ShardSearch(r, b, queryTerms(r, m.query, opts, now), opts, now, m.k);
    line.send(s.firstPhase());
    line.send(s.expansionPhase(line.receive<Map<string, number> | null>()));
    const top = s.offerPhase(line.receive<Whole>());
    line.send(top.map((r) => ({ ...r, hit: s.hit(r.slot, r.score) })));
    s.end();
  }
  process.exit(0);
} else {
  const docs = Number(option('--docs') ?? 300_000);
  const queries = Number(option('--queries') ?? 400);
  const rounds = Number(option('--rounds') ?? 3);
  const { rows, questions, now } = bigUserRows(docs);
  const half = (r: Row) => Math.floor((r.id - 1) / 20) % 2;
  const { port1, port2 } = new MessageChannel();
  const flags = new Int32Array(new SharedArrayBuffer(8));
  const worker = new Worker(fileURLToPath(import.meta.url), {
    workerData: { rows: rows.filter((r) => half(r) === 1), port: port2, flags, now },
    transferList: [port2],
  });
  const line = new Line(port1, flags, 0);
  const whole = build(rows);
  const a = build(rows.filter((r) => half(r) === 0));
  const [text, meta] = line.receive<Summary[]>();
  line.send([summary(a.fields.text), summary(a.fields.meta)]);
  join(a.fields.text, text!);
  join(a.fields.meta, meta!);
  line.receive<string>();
  const b = SearchBuffers.forSlots(whole.size);
  const sharded = (query: string, k: number, explain = false): SearchHit[] => {
    line.send({ query, k, explain });
    const opts = { k, now, explain };
    const r = a.ranked(b, 0);
    const q = queryTerms(r, query, opts, now);
    const s = new ShardSearch(r, b, q, opts, now, k);
    try {
      const first = [s.firstPhase(), line.receive<FirstReport>()];
      const exp = expansionTerms(r.weights, first, q.qTerms, (t) => r.text.idf(t));
      line.send(exp);
      const mine = s.expansionPhase(exp);
      const whole = wholeOf(r.weights, first, [mine, line.receive<ExpansionReport>()], q.whenLift);
      line.send(whole);
      const top0 = s.offerPhase(whole);
      const top1 = line.receive<(Ranked & { hit: SearchHit })[]>();
      return merged([top0, top1], k).map((r) =>
        r.shard === 0 ? s.hit(r.slot, r.score) : (r as { hit: SearchHit }).hit,
      );
    } finally {
      s.end();
    }
  };
  for (let i = 0; i < 100; i++) {
    whole.search(questions[questions.length - 1 - i]!, { k: 10, now });
    sharded(questions[questions.length - 1 - i]!, 10);
  }
  let differing = 0;
  for (const explain of [false, true])
    for (let i = 0; i < queries; i++) {
      const q = questions[i % questions.length]!;
      if (JSON.stringify(whole.search(q, { k: 10, now, explain })) !== JSON.stringify(sharded(q, 10, explain)))
        differing++;
    }
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const p = (t: number[], f: number) => Math.round([...t].sort((x, y) => x - y)[Math.floor(t.length * f)]! * 100) / 100;
  const res: Record<string, { p50: number[]; p90: number[]; cpu: number[] }> = {
    whole: { p50: [], p90: [], cpu: [] },
    sharded: { p50: [], p90: [], cpu: [] },
  };
  for (let round = 0; round < rounds; round++)
    for (const side of round % 2 ? ['sharded', 'whole'] : ['whole', 'sharded']) {
      const times: number[] = [];
      const c = cpu();
      for (let i = 0; i < queries; i++) {
        const t = performance.now();
        if (side === 'whole') whole.search(questions[i % questions.length]!, { k: 10, now });
        else sharded(questions[i % questions.length]!, 10);
        times.push(performance.now() - t);
      }
      res[side]!.cpu.push(Math.round(((cpu() - c) / queries) * 100) / 100);
      res[side]!.p50.push(p(times, 0.5));
      res[side]!.p90.push(p(times, 0.9));
    }
  line.send(null);
  console.log(JSON.stringify({ docs, queries, differing_of: [differing, 2 * queries], ...res }));
  await new Promise((r) => worker.once('exit', r));
}
