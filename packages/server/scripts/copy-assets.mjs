// tsc copies no SQL: mirror the migration files next to the compiled code.
import { cpSync } from 'node:fs';
cpSync(new URL('../src/store/migrations', import.meta.url), new URL('../dist/store/migrations', import.meta.url), { recursive: true });
