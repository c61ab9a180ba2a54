import {
  runCli,
  startServerProcess,
  startWorkerProcess,
  type BackgroundProcess,
  type ServerProcess,
} from './process.js';

/**
 * Concurrent cold starts, shared by test/cold-start.test.ts and `npm run bench:faults` (its cold-start
 * scenarios): `servers` servers and `workers` workers started at the same moment on one empty
 * database, as a deploy starts N processes. Each server must come up and write; each worker must
 * start and stay up; then `engram audit verify` must pass on the database they made.
 */
export interface ColdStart {
  /** Processes that came up (servers ready and writing, workers started), of `started`. */
  cameUp: number;
  started: number;
  /** Why each process that did not come up failed (its stderr's tail), and any error line of one that did. */
  failures: string[];
  /** Seconds from the start of all to the last one up. */
  seconds: number;
  auditVerified: boolean;
  auditOutput: string;
}

/** Lines a process that came up must not have logged: what concurrent starts broke before (issue 46.3, 46.4). */
const START_RACE = /already exists|duplicate key|unhandled|you don't own a lock/i;
const START_LIMIT_MS = 90_000;
const tail = (text: string) => text.split('\n').slice(-15).join('\n');

export async function startTogether(
  env: Record<string, string>,
  servers: number,
  workers: number,
  key: string,
): Promise<ColdStart> {
  const begun = performance.now();
  const up: Array<ServerProcess | BackgroundProcess> = [];
  const failures: string[] = [];
  let lastUp = begun;
  const serving = Array.from({ length: servers }, async (_, i) => {
    // Several processes starting at once on two busy cores: each takes several times its time alone.
    const server = await startServerProcess(env, { limitMs: START_LIMIT_MS });
    up.push(server);
    const added = await fetch(`${server.url}/memory/add`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'x-end-user-id': `cold-${i}` },
      body: JSON.stringify({ text: `written by server ${i}` }),
    });
    if (added.status !== 201) throw new Error(`server ${i}: an add answered ${added.status} ${await added.text()}`);
    lastUp = Math.max(lastUp, performance.now());
  });
  const working = Array.from({ length: workers }, async (_, i) => {
    // Logged at info: its start line is what says it is up.
    const worker = startWorkerProcess({ ...env, ENGRAM_LOG_LEVEL: 'info' });
    up.push(worker);
    const deadline = Date.now() + START_LIMIT_MS;
    while (!worker.stderr().includes('worker started')) {
      if (worker.child.exitCode !== null || worker.child.signalCode !== null)
        throw new Error(`worker ${i} exited:\n${tail(worker.stderr())}`);
      if (Date.now() > deadline)
        throw new Error(`worker ${i} not started within ${START_LIMIT_MS / 1000} s:\n${tail(worker.stderr())}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    lastUp = Math.max(lastUp, performance.now());
  });
  const outcomes = await Promise.allSettled([...serving, ...working]);
  for (const outcome of outcomes)
    if (outcome.status === 'rejected') failures.push(String((outcome.reason as Error).message ?? outcome.reason));
  // Still up a moment later (a process that crashed right after its start line is not up).
  await new Promise((r) => setTimeout(r, 500));
  let cameUp = outcomes.filter((o) => o.status === 'fulfilled').length;
  for (const process of up) {
    const gone = process.child.exitCode !== null || process.child.signalCode !== null;
    if (gone)
      cameUp = Math.min(cameUp, up.filter((p) => p.child.exitCode === null && p.child.signalCode === null).length);
    const raced = START_RACE.exec(process.stderr());
    if (raced) failures.push(`logged "${raced[0]}":\n${tail(process.stderr())}`);
  }
  await Promise.all(up.map((p) => p.stop()));
  const audit = await runCli(['audit', 'verify'], env);
  return {
    cameUp,
    started: servers + workers,
    failures,
    seconds: Math.round(lastUp - begun) / 1000,
    auditVerified: audit.code === 0 && /: ok \(/.test(audit.stdout),
    auditOutput: audit.stdout + audit.stderr,
  };
}
