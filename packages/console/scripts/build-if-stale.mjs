// `npm install` (prepare) and `npm start` run this: the console is built with Vite only when a source,
// the page or the configuration changed since the last build, so a start with a fresh build costs a
// few file stats. The stamp is written only after a build succeeded.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const root = fileURLToPath(new URL('..', import.meta.url));
const stamp = join(root, 'dist', '.build-stamp');

function newest(path) {
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  return Math.max(info.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))));
}

let built = 0;
try {
  built = statSync(stamp).mtimeMs;
} catch {
  // Never built.
}
const inputs = ['src', 'index.html', 'vite.config.ts', 'package.json', '../client/src'].map((p) =>
  newest(join(root, p)),
);
if (Math.max(...inputs) >= built) {
  process.stderr.write('engram: building the console (sources changed since the last build)\n');
  const vite = join(createRequire(import.meta.url).resolve('vite/package.json'), '..', 'bin', 'vite.js');
  // A production build whoever asks: under a test runner NODE_ENV is `test`, which gave React's
  // development build (532 kB instead of 293 kB).
  execFileSync(process.execPath, [vite, 'build', '--logLevel', 'warn'], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, NODE_ENV: 'production' },
  });
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
}
