/**
 * The shape of a fault scenario for `npm run bench:faults` (bench/faults.ts). A scenario is a file in
 * this folder exporting `scenario`; the runner starts a server per trial, puts 8 clients of write load
 * on it, calls `inject`, and judges the trial: process alive, acknowledged writes lost, 5xx other than
 * 503, seconds from the end of the fault to the first acknowledged write.
 */
import type { BenchServer } from '../lib/server.js';

export type Dialect = 'sqlite' | 'postgres';

export interface FaultContext {
  dialect: Dialect;
  /** The running server (its process, url, key; `databaseUrl` is what it was pointed at). */
  server: BenchServer;
  /** The server's data directory (SQLite file, blobs). */
  dataDir: string;
  /** PostgreSQL: the trial's database URL and an administrator URL on the same cluster. */
  databaseUrl?: string;
  adminUrl?: string;
  /** Acknowledged writes so far (the load's count), for scenarios that wait for load before striking. */
  acknowledged(): number;
  sleep(ms: number): Promise<void>;
}

export interface TrialSetup {
  dialect: Dialect;
  dataDir: string;
  /** PostgreSQL: the trial's fresh database, and an administrator URL on the same cluster. */
  databaseUrl?: string;
  adminUrl?: string;
}

export interface ScenarioSetup {
  env?: Record<string, string>;
  nodeArgs?: string[];
  databaseUrl?: string;
  cleanup?(): Promise<void>;
}

export interface FaultScenario {
  name: string;
  /** One line: what the fault is and what a real deployment sees that is like it. */
  description: string;
  databases: Dialect[];
  /**
   * Before each trial's server starts: extra environment or node arguments for it, a database URL to
   * serve instead of the trial's (one through a proxy the scenario cuts), and what to undo after the trial.
   */
  setup?(trial: TrialSetup): Promise<ScenarioSetup>;
  /** Statuses besides 201 and 503 that this fault answers by design (507 insufficient_storage for a full disk). */
  allowedStatuses?: number[];
  /**
   * Makes the fault happen and resolves when it is over (the database back, the lock released, ...).
   * May return figures of its own (e.g. rss_peak_mb), added to the trial's result.
   */
  inject(ctx: FaultContext): Promise<Record<string, number | string | boolean> | undefined>;
}

/**
 * A fault that happens at start-up rather than under load (concurrent cold starts): the runner starts
 * no server and no load; each trial gets a fresh empty database and runs the scenario itself. A file
 * exports one or more as `startScenarios`.
 */
export interface StartScenario {
  name: string;
  description: string;
  databases: Dialect[];
  /** Why it cannot run here (PgBouncer not installed, say), or undefined. */
  unavailable?(): string | undefined;
  /** One trial on `trial` (a fresh PostgreSQL database, or an empty data directory): whether it met its bound, and its figures. */
  run(trial: TrialSetup): Promise<{ ok: boolean; figures: Record<string, number | string | boolean | string[]> }>;
}
