import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';

describe('process settings', () => {
  it('serves one HTTP process running background jobs by default', () => {
    expect(loadConfig({})).toMatchObject({ httpProcesses: 1, runJobs: true, warnings: [] });
  });

  it('reads ENGRAM_HTTP_PROCESSES and ENGRAM_RUN_JOBS', () => {
    expect(loadConfig({ ENGRAM_HTTP_PROCESSES: '3', ENGRAM_RUN_JOBS: 'false' })).toMatchObject({ httpProcesses: 3, runJobs: false });
    expect(() => loadConfig({ ENGRAM_RUN_JOBS: 'sometimes' })).toThrow(ConfigError);
    expect(() => loadConfig({ ENGRAM_HTTP_PROCESSES: '0' })).toThrow('ENGRAM_HTTP_PROCESSES must be an integer');
  });

  it('takes ENGRAM_WORKERS as a deprecated alias, with a warning, unless the new name is set', () => {
    const old = loadConfig({ ENGRAM_WORKERS: '2' });
    expect(old.httpProcesses).toBe(2);
    expect(old.warnings).toEqual([expect.stringContaining('ENGRAM_WORKERS is deprecated')]);
    expect(loadConfig({ ENGRAM_WORKERS: '2', ENGRAM_HTTP_PROCESSES: '4' })).toMatchObject({ httpProcesses: 4, warnings: [] });
  });
});
