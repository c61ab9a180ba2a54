// `npm run openapi`: writes openapi.json, the document an app with the default configuration serves
// at /openapi.json (built on a throwaway SQLite file), from which both clients are typed and checked.
// src/http/openapi.test.ts fails when the committed file differs from what the server serves.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { buildServices } from '../src/services.js';
import { openDatabase } from '../src/store/database.js';

const target = fileURLToPath(new URL('../openapi.json', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'engram-openapi-'));
const config = loadConfig({ ENGRAM_DATA_DIR: dir, ENGRAM_LOG_LEVEL: 'warn' });
const database = openDatabase(config.database);
const app = await buildApp({ services: buildServices({ config, database }) });
try {
  const res = await app.inject({ method: 'GET', url: '/openapi.json' });
  writeFileSync(target, `${JSON.stringify(res.json(), null, 2)}\n`);
} finally {
  await app.close();
  await database.close();
  rmSync(dir, { recursive: true, force: true });
}
process.stdout.write(`wrote ${target}\n`);
