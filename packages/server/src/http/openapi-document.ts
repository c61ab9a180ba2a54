import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../app.js';
import { loadConfig } from '../config.js';
import { buildServices } from '../services.js';
import { openDatabase } from '../store/database.js';

/** The document an app with the default configuration serves at /openapi.json (on a throwaway SQLite file). */
export async function servedOpenApiDocument(): Promise<unknown> {
  const dir = mkdtempSync(join(tmpdir(), 'engram-openapi-'));
  const config = loadConfig({ ENGRAM_DATA_DIR: dir });
  const database = openDatabase(config.database);
  const app = await buildApp({ services: buildServices({ config, database }) });
  try {
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    return res.json();
  } finally {
    await app.close();
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
