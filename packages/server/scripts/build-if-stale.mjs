// `npm start` runs this first: it compiles (tsc, then the assets) only when a source, a
// tsconfig or the package manifest changed since the last build, so a second start costs no
// compilation. The stamp is written only after a build succeeded. The test run's setup and the
// Python client's tests run it too, possibly at the same moment: one builds while the others wait
// for it (a lock file), then find the build fresh. The server's workspace dependencies come first,
// each the same way: the TypeScript client, then the MCP server built on it (mounted at /mcp).
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { basename, join } from 'node:path';

const packages = fileURLToPath(new URL('../../', import.meta.url));
/** Stamps and locks live outside dist/, which a package's tarball ships whole. */
const state = join(packages, '..', 'node_modules', '.cache', 'engram-build');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
/** A lock older than this was left by a build that died (one takes well under a minute). */
const ABANDONED_MS = 5 * 60_000;

function newest(path) {
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  // A directory's own time moves when a file in it is removed or renamed, which no remaining file shows.
  return Math.max(info.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))));
}

function stale(root, stamp) {
  // A dist/ removed by hand is stale whatever the stamp says.
  if (!existsSync(join(root, 'dist'))) return true;
  let built = 0;
  try {
    built = statSync(stamp).mtimeMs;
  } catch {
    // Never built.
  }
  const inputs = ['src', 'scripts', 'package.json', 'tsconfig.json', 'tsconfig.build.json']
    .filter((p) => existsSync(join(root, p)))
    .map((p) => newest(join(root, p)));
  return Math.max(...inputs) >= built;
}

function acquire(lock) {
  mkdirSync(state, { recursive: true });
  for (;;) {
    try {
      return openSync(lock, 'wx');
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
      try {
        if (Date.now() - statSync(lock).mtimeMs > ABANDONED_MS) unlinkSync(lock);
      } catch {
        // Released meanwhile.
      }
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
}

/** Compiles the package at `root` when stale; `assets` also copies the server's non-TypeScript files. */
function buildIfStale(name, root, assets) {
  const stamp = join(state, `${basename(root)}.stamp`);
  const lock = join(state, `${basename(root)}.lock`);
  if (!stale(root, stamp)) return;
  const held = acquire(lock);
  try {
    // Another run may have built it while this one waited.
    if (stale(root, stamp)) {
      process.stderr.write(`engram: compiling ${name} (sources changed since the last build)\n`);
      execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
      if (assets) execFileSync(process.execPath, [join(root, 'scripts', 'copy-assets.mjs')], { stdio: 'inherit' });
      writeFileSync(stamp, `${new Date().toISOString()}\n`);
    }
  } finally {
    closeSync(held);
    unlinkSync(lock);
  }
}

// Arguments name the packages to build (`client`): a workspace package built on the client runs
// this from its own `prepare`, since npm runs the workspaces' prepare scripts in path order, not
// in dependency order. None: all of them.
const wanted = process.argv.slice(2);
for (const [name, folder, assets] of [
  ['@engram/client', 'client', false],
  ['@engram/mcp', 'mcp', false],
  ['the server', 'server', true],
]) {
  if (wanted.length === 0 || wanted.includes(folder)) buildIfStale(name, join(packages, folder), assets);
}
