// tsc copies only what it compiles: mirror the data files the code reads at run time (SQL
// migrations, the common-password list) next to the compiled code.
import { cpSync, statSync } from 'node:fs';
const src = new URL('../src', import.meta.url);
const dist = new URL('../dist', import.meta.url);
cpSync(src, dist, { recursive: true, filter: (path) => statSync(path).isDirectory() || /\.(sql|txt)$/.test(path) });
