import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';
import { randomToken } from './crypto.js';

/**
 * The master secret that signs access tokens and seals stored responses: ENGRAM_SECRET_KEY,
 * else a key generated once and kept in ENGRAM_DATA_DIR/secret.key (mode 0600). Several
 * processes on PostgreSQL must share one, so there it has to come from ENGRAM_SECRET_KEY.
 */
export function loadSecretKey(config: Pick<Config, 'secretKey' | 'dataDir'>): Buffer {
  if (config.secretKey) return Buffer.from(config.secretKey, 'utf8');
  const file = join(config.dataDir, 'secret.key');
  try {
    return Buffer.from(readFileSync(file, 'utf8').trim(), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(config.dataDir, { recursive: true });
  try {
    // 'wx': when two processes start at once, one writes and the other reads what it wrote.
    writeFileSync(file, `${randomToken(48)}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  chmodSync(file, 0o600);
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'utf8');
}
