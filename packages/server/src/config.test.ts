import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';

describe('process settings', () => {
  it('serves one HTTP process running background jobs by default', () => {
    expect(loadConfig({})).toMatchObject({ httpProcesses: 1, runJobs: true, warnings: [] });
  });

  it('reads ENGRAM_HTTP_PROCESSES and ENGRAM_RUN_JOBS', () => {
    expect(loadConfig({ ENGRAM_HTTP_PROCESSES: '3', ENGRAM_RUN_JOBS: 'false' })).toMatchObject({
      httpProcesses: 3,
      runJobs: false,
    });
    expect(() => loadConfig({ ENGRAM_RUN_JOBS: 'sometimes' })).toThrow(ConfigError);
    expect(() => loadConfig({ ENGRAM_HTTP_PROCESSES: '0' })).toThrow('ENGRAM_HTTP_PROCESSES must be an integer');
  });

  it('takes ENGRAM_WORKERS as a deprecated alias, with a warning, unless the new name is set', () => {
    const old = loadConfig({ ENGRAM_WORKERS: '2' });
    expect(old.httpProcesses).toBe(2);
    expect(old.warnings).toEqual([expect.stringContaining('ENGRAM_WORKERS is deprecated')]);
    expect(loadConfig({ ENGRAM_WORKERS: '2', ENGRAM_HTTP_PROCESSES: '4' })).toMatchObject({
      httpProcesses: 4,
      warnings: [],
    });
  });

  it('reads how long the search thread stays awake for its next call, 0 to never', () => {
    expect(loadConfig({}).retrieval.searchThreadSpinMicros).toBe(2_000);
    expect(loadConfig({ ENGRAM_SEARCH_THREAD_SPIN_US: '0' }).retrieval.searchThreadSpinMicros).toBe(0);
    expect(loadConfig({ ENGRAM_SEARCH_THREAD_SPIN_US: '500' }).retrieval.searchThreadSpinMicros).toBe(500);
    expect(() => loadConfig({ ENGRAM_SEARCH_THREAD_SPIN_US: '-1' })).toThrow(
      'ENGRAM_SEARCH_THREAD_SPIN_US must be an integer between 0 and 100000',
    );
    expect(() => loadConfig({ ENGRAM_SEARCH_THREAD_SPIN_US: '1ms' })).toThrow(ConfigError);
  });
});

describe('lifetimes and retention', () => {
  it('reads how long links work and how long finished work is kept, within bounds', () => {
    expect(loadConfig({})).toMatchObject({
      links: { invitationTtlMs: 7 * 86_400_000, resetTtlMs: 3_600_000 },
      jobRetentionDays: 30,
      webhooks: { retentionDays: 30 },
    });
    const set = loadConfig({
      ENGRAM_INVITATION_TTL_HOURS: '24',
      ENGRAM_PASSWORD_RESET_TTL_MINUTES: '15',
      ENGRAM_JOB_RETENTION_DAYS: '7',
      ENGRAM_WEBHOOK_RETENTION_DAYS: '90',
    });
    expect(set).toMatchObject({
      links: { invitationTtlMs: 86_400_000, resetTtlMs: 900_000 },
      jobRetentionDays: 7,
      webhooks: { retentionDays: 90 },
    });
    expect(() => loadConfig({ ENGRAM_INVITATION_TTL_HOURS: '0' })).toThrow(
      'ENGRAM_INVITATION_TTL_HOURS must be an integer',
    );
    expect(() => loadConfig({ ENGRAM_PASSWORD_RESET_TTL_MINUTES: '1' })).toThrow(
      'ENGRAM_PASSWORD_RESET_TTL_MINUTES must be an integer',
    );
    expect(() => loadConfig({ ENGRAM_JOB_RETENTION_DAYS: 'forever' })).toThrow(ConfigError);
    expect(() => loadConfig({ ENGRAM_WEBHOOK_RETENTION_DAYS: '0' })).toThrow(
      'ENGRAM_WEBHOOK_RETENTION_DAYS must be an integer',
    );
  });
});

describe('connector vendors', () => {
  it('reads each OAuth client and base URL, and the redirect URL', () => {
    const config = loadConfig({
      ENGRAM_PUBLIC_URL: 'https://memory.example.com/',
      ENGRAM_SLACK_CLIENT_ID: '123.456',
      ENGRAM_SLACK_CLIENT_SECRET: 's3cret',
      ENGRAM_GRANOLA_BASE_URL: 'https://granola-proxy.internal',
    });
    expect(config.connectors).toEqual({
      redirectUrl: 'https://memory.example.com/connectors/oauth/callback',
      vendors: {
        slack: { clientId: '123.456', clientSecret: 's3cret' },
        google_drive: {},
        granola: { baseUrl: 'https://granola-proxy.internal' },
      },
    });
    expect(loadConfig({ ENGRAM_OAUTH_REDIRECT_URL: 'https://console.example.com/cb' }).connectors.redirectUrl).toBe(
      'https://console.example.com/cb',
    );
    expect(() => loadConfig({ ENGRAM_GOOGLE_DRIVE_CLIENT_ID: 'only-the-id' })).toThrow(
      'ENGRAM_GOOGLE_DRIVE_CLIENT_ID and ENGRAM_GOOGLE_DRIVE_CLIENT_SECRET go together',
    );
    expect(() => loadConfig({ ENGRAM_SLACK_BASE_URL: 'ftp://slack' })).toThrow(
      'ENGRAM_SLACK_BASE_URL must be an http(s) URL',
    );
  });
});
