// `npm start` runs this first: it compiles (tsc, then the assets) only when a source, a
// tsconfig or the package manifest changed since the last build, so a second start costs no
// compilation. The stamp is written only after a build succeeded.
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
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))));
}

let built = 0;
try {
  built = statSync(stamp).mtimeMs;
} catch {
  // Never built.
}
const inputs = ['src', 'scripts', 'package.json', 'tsconfig.json', 'tsconfig.build.json'].map((p) => newest(join(root, p)));
if (Math.max(...inputs) >= built) {
  process.stderr.write('engram: compiling (sources changed since the last build)\n');
  execFileSync(process.execPath, [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  execFileSync(process.execPath, [join(root, 'scripts', 'copy-assets.mjs')], { stdio: 'inherit' });
  writeFileSync(stamp, new Date().toISOString() + '\n');
}
