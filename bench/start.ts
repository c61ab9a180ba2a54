/**
 * How long a process takes to start, with the database already migrated and bootstrapped by a first,
 * unmeasured start: prints JSON. Runs use one data directory and a free port each.
 *   npm run bench:start [-- --runs 3] [--base REV]
 * - `npm start` to a 200 from /readyz (the build already up to date: the second start after install);
 * - `engram serve` (the build's dist/main.js, no npm) to a 200 from /readyz, wall time and the process's CPU
 *   (every thread, from /proc), alternated with REV's build when `--base` is given;
 * - the ceiling, measured in the same run: a bare Fastify process with one route, to its first 200.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baselineMain, median } from './lib/baseline.js';
import { option } from './lib/args.js';

const runs = Number(option('--runs') ?? 3);
const base = option('--base');
const ROOT = new URL('..', import.meta.url).pathname;
const MAIN = join(ROOT, 'packages/server/dist/main.js');

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });

const dir = mkdtempSync(join(tmpdir(), 'engram-start-'));
/** The ceiling: Fastify itself, resolved from the server's package, one route, no schemas. */
const bare = join(dir, 'bare.mjs');
writeFileSync(
  bare,
  `import { createRequire } from 'node:module';
const Fastify = createRequire(${JSON.stringify(join(ROOT, 'packages/server/package.json'))})('fastify');
const app = Fastify();
app.get('/readyz', async () => ({ ok: true }));
await app.listen({ host: '127.0.0.1', port: Number(process.env.ENGRAM_PORT) });
`,
);

/** CPU a process has used, every thread (utime + stime), in ms. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

interface Start {
  wall_ms: number;
  cpu_ms?: number;
}

/** Starts `command`, waits for a 200 from /readyz, and stops it (its whole process group). */
async function once(command: string, args: string[], measureCpu: boolean): Promise<Start> {
  const port = await freePort();
  const started = performance.now();
  const child: ChildProcess = spawn(command, args, {
    cwd: ROOT,
    detached: true,
    stdio: 'ignore',
    env: { ...process.env, ENGRAM_DATA_DIR: dir, ENGRAM_PORT: String(port), ENGRAM_LOG_LEVEL: 'warn' },
  });
  try {
    for (;;) {
      try {
        if ((await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200) {
          const wall = performance.now() - started;
          return { wall_ms: Math.round(wall), ...(measureCpu ? { cpu_ms: cpuMs(child.pid!) } : {}) };
        }
      } catch {
        /* not listening yet */
      }
      if (child.exitCode !== null) throw new Error(`${command} ${args.join(' ')} exited`);
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    process.kill(-child.pid!, 'SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

const serve = (main: string) => () => once(process.execPath, [main, 'serve'], true);
const variants: Record<string, () => Promise<Start>> = {
  npm_start: () => once('npm', ['start', '--silent'], false),
  serve: serve(MAIN),
  ...(base ? { [`serve_base_${base}`]: serve(baselineMain(ROOT, base).main) } : {}),
  bare_fastify: () => once(process.execPath, [bare], true),
};

await variants.npm_start!();
const results: Record<string, Start[]> = Object.fromEntries(Object.keys(variants).map((name) => [name, []]));
// Alternated, so that a moment of load weighs on every variant alike.
for (let i = 0; i < runs; i++) for (const [name, run] of Object.entries(variants)) results[name]!.push(await run());
rmSync(dir, { recursive: true, force: true });
const summary = (starts: Start[]) => ({
  wall_ms: starts.map((s) => s.wall_ms),
  median_wall_ms: median(starts.map((s) => s.wall_ms)),
  ...(starts[0]?.cpu_ms !== undefined ? { median_cpu_ms: median(starts.map((s) => s.cpu_ms!)) } : {}),
});
console.log(
  JSON.stringify({
    bench: 'start',
    runs,
    ...Object.fromEntries(Object.entries(results).map(([name, starts]) => [name, summary(starts)])),
  }),
);
