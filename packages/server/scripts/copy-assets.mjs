// tsc copies only what it compiles: mirror the data files the code reads at run time (SQL
// migrations, the common-password list, the fact-kind model) next to the compiled code. The migrations are read as a
// directory, so a migration renamed or removed in src must not linger in dist: that copy starts empty.
import { cpSync, rmSync, statSync } from 'node:fs';
const src = new URL('../src', import.meta.url);
const dist = new URL('../dist', import.meta.url);
rmSync(new URL('../dist/store/migrations', import.meta.url), { recursive: true, force: true });
cpSync(src, dist, {
  recursive: true,
  filter: (path) => statSync(path).isDirectory() || /\.(sql|txt|json)$/.test(path),
});
