import { execFile } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe } from 'vitest';
import { buildApp } from '../app.js';
import { subscribe } from '../core/event-subscriptions.js';
import { listEventTypes } from '../core/events.js';
import { loadConfig, type Config } from '../config.js';
import { addMembership, createApiKey, createOrganization, createProject, createUser } from '../modules/org/index.js';
import { buildServices, type Services } from '../services.js';
import { startBackground } from '../worker.js';
import { openDatabase, type Database, type Dialect } from '../store/database.js';
import { migrate } from '../store/migrate.js';
import { programArgs } from './process.js';

/**
 * Test support: a real app on a fresh database of either dialect, spoken to over HTTP
 * (Fastify inject). Each call of startTestApp gets its own database.
 */

const POSTGRES_URL = process.env.ENGRAM_TEST_DATABASE_URL;
const SERVER_DIR = fileURLToPath(new URL('../../', import.meta.url));

/** Runs a suite once per dialect; PostgreSQL runs are skipped, visibly, without ENGRAM_TEST_DATABASE_URL. */
export function forEachDialect(name: string, suite: (dialect: Dialect) => void): void {
  for (const dialect of ['sqlite', 'postgres'] as const) {
    if (dialect === 'postgres' && !POSTGRES_URL) {
      describe.skip(`${name} [postgres: skipped, set ENGRAM_TEST_DATABASE_URL]`, () => {});
      continue;
    }
    describe(`${name} [${dialect}]`, () => suite(dialect));
  }
}

export async function freshDatabaseConfig(
  dialect: Dialect,
): Promise<{ config: Config['database']; drop: () => Promise<void> }> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'engram-test-'));
    return {
      config: { dialect, path: join(dir, 'engram.db') },
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const name = `engram_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(POSTGRES_URL!);
  url.pathname = `/${name}`;
  return {
    config: { dialect, url: url.toString(), poolSize: 5, preparedStatements: true },
    drop: async () => {
      const c = new pg.Client({ connectionString: POSTGRES_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export interface Response {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: any;
  text: string;
}

export interface CallOptions {
  body?: unknown;
  /** Raw payload, sent as is (for malformed JSON and wrong content types). */
  payload?: string | Buffer;
  /** An array sends the header once per value. */
  headers?: Record<string, string | string[] | undefined>;
  /** API key to send; null sends none. Defaults to the test project's key. */
  key?: string | null;
  /** X-End-User-ID; null sends none. Defaults to "user-1". */
  endUser?: string | null;
  project?: string | null;
  /** Bearer access token; when set, no API key, X-Project-ID or X-End-User-ID is sent unless given. */
  token?: string;
}

export interface Login {
  token: string;
  refreshToken: string;
  sessionId: number;
  userId: number;
  email: string;
  password: string;
}

export interface TestApp {
  app: FastifyInstance;
  services: Services;
  database: Database;
  dialect: Dialect;
  /** ENGRAM_DATABASE_URL of the test database, for running the CLI against it. */
  databaseUrl: string;
  organizationId: string;
  projectId: string;
  /** An unlocked key of the organization (sends X-Project-ID by default). */
  key: string;
  keyId: number;
  userId: number;
  /** The owner's sign-in. */
  email: string;
  password: string;
  logs: string[];
  call(method: string, url: string, options?: CallOptions): Promise<Response>;
  /** A second organization with its own project and key, to prove isolation. */
  otherTenant(): Promise<{ organizationId: string; projectId: string; key: string }>;
  newKey(input?: Partial<Parameters<typeof createApiKey>[1]>): Promise<{ id: number; key: string }>;
  /** Runs the real CLI (testing/process.ts#programArgs) against this test's database. */
  cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  /** Signs in over HTTP (default: the owner) and returns the tokens. */
  login(input?: { email?: string; password?: string; scopes?: string[] }): Promise<Login>;
  /** A new account with `role` in the organization (default: the test organization), signed in. */
  member(role: string, input?: { organizationId?: string; scopes?: string[] }): Promise<Login>;
  close(): Promise<void>;
}

const PASSWORD = 'correct horse battery';
const randomEmail = (who: string) => `${who}-${Math.random().toString(36).slice(2)}@example.com`;

/** The harness's event subscription (core/event-subscriptions.ts#subscribe); a test of unsubscribed writes ends it. */
export const HARNESS_SUBSCRIBER = 'test-harness';

/** High limits by default so that no test trips them by accident; a test of the limits lowers them. */
export async function startTestApp(dialect: Dialect, overrides: Partial<Config> = {}): Promise<TestApp> {
  const fresh = await freshDatabaseConfig(dialect);
  const database = openDatabase(fresh.config);
  await migrate(database);
  const org = await createOrganization(database.db, 'Test organization');
  const project = await createProject(database.db, { organizationId: org.id, name: 'Test project', slug: 'test' });
  const email = randomEmail('owner');
  const userId = await createUser(database.db, email, PASSWORD);
  await addMembership(database.db, org.id, userId, 'owner');
  const key = await createApiKey(database.db, { organizationId: org.id, name: 'test key', createdBy: userId });
  // Tests read the events a write emits from the outbox, which keeps only events someone receives:
  // the harness receives every kind in its project, as a webhook endpoint subscribed to all would.
  await subscribe(database.db, HARNESS_SUBSCRIBER, {
    organizationId: org.id,
    projectId: project.id,
    types: listEventTypes().map((t) => t.type),
  });
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const defaults = loadConfig({});
  const services = buildServices({
    config: {
      ...defaults,
      rateLimit: { max: 1_000_000, windowSeconds: 60, loginMax: 1_000_000 },
      auth: { ...defaults.auth, loginMaxFailures: 1_000, loginIpMaxFailures: 1_000_000 },
      ...overrides,
    },
    database,
    // A configured secret is the master secret, as in `engram serve`, so child processes given it can read what this app sealed.
    ...(overrides.secretKey ? { secretKey: Buffer.from(overrides.secretKey, 'utf8') } : {}),
  });
  const app = await buildApp({ services, logStream });
  await app.ready();
  // Like `engram serve`: background jobs and chores run beside the app unless turned off.
  const background = services.config.runJobs ? startBackground(services, app.log) : null;

  let origin: Promise<string> | undefined;
  const overTheWire = async (
    method: string,
    path: string,
    headers: Record<string, string | string[]>,
    payload?: string | Buffer,
  ) => {
    origin ??= app.listen({ host: '127.0.0.1', port: 0 });
    const { hostname, port } = new URL(await origin);
    const raw = Object.entries(headers).flatMap(([name, value]) => [value].flat().flatMap((v) => [name, v]));
    // Given a raw header list, Node adds neither Host nor Content-Length.
    raw.push(
      'host',
      `${hostname}:${port}`,
      'content-length',
      String(payload === undefined ? 0 : Buffer.byteLength(payload)),
    );
    return new Promise<{ statusCode: number; headers: Response['headers']; body: string }>((resolve, reject) => {
      const req = httpRequest({ hostname, port, path, method, headers: raw }, (res) => {
        let body = '';
        res
          .setEncoding('utf8')
          .on('data', (chunk: string) => (body += chunk))
          .on('end', () => resolve({ statusCode: res.statusCode!, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.end(payload);
    });
  };

  const call: TestApp['call'] = async (method, url, options = {}) => {
    const headers: Record<string, string | string[]> = {};
    const bearer = options.token !== undefined;
    if (bearer) headers.authorization = `Bearer ${options.token}`;
    const apiKey = options.key === undefined ? (bearer ? null : key.key) : options.key;
    if (apiKey !== null) headers['x-api-key'] = apiKey;
    const projectId = options.project === undefined ? (bearer ? null : project.id) : options.project;
    if (projectId !== null) headers['x-project-id'] = projectId;
    const endUser = options.endUser === undefined ? (bearer ? null : 'user-1') : options.endUser;
    if (endUser !== null) headers['x-end-user-id'] = endUser;
    let payload: string | Buffer | undefined = options.payload;
    if (options.body !== undefined) {
      payload = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      if (value === undefined) delete headers[name.toLowerCase()];
      else headers[name.toLowerCase()] = value;
    }
    // A repeated header (an array value) must reach the server repeated, which inject cannot do: real HTTP then.
    const res = Object.values(headers).some(Array.isArray)
      ? await overTheWire(method, url, headers, payload)
      : await app.inject({ method: method as 'GET', url, headers, ...(payload !== undefined ? { payload } : {}) });
    let body: unknown;
    try {
      body = res.body ? JSON.parse(res.body) : undefined;
    } catch {
      body = undefined;
    }
    return { status: res.statusCode, headers: res.headers, body, text: res.body };
  };

  const login: TestApp['login'] = async (input = {}) => {
    const credentials = { email: input.email ?? email, password: input.password ?? PASSWORD };
    const res = await call('POST', '/auth/login', {
      key: null,
      project: null,
      endUser: null,
      body: { ...credentials, ...(input.scopes ? { scopes: input.scopes } : {}) },
    });
    if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`);
    const user = await database.db
      .selectFrom('users')
      .select('id')
      .where('email', '=', credentials.email)
      .executeTakeFirstOrThrow();
    return {
      token: res.body.access_token,
      refreshToken: res.body.refresh_token,
      sessionId: res.body.session_id,
      userId: user.id,
      ...credentials,
    };
  };

  const databaseUrl = fresh.config.dialect === 'sqlite' ? fresh.config.path : fresh.config.url;
  return {
    app,
    services,
    database,
    dialect,
    logs,
    call,
    userId,
    email,
    databaseUrl,
    cli: async (...args) => {
      try {
        const { stdout, stderr } = await promisify(execFile)(process.execPath, [...programArgs(), ...args], {
          cwd: SERVER_DIR,
          env: { ...process.env, ENGRAM_DATABASE_URL: databaseUrl, ENGRAM_LOG_LEVEL: 'warn' },
        });
        return { code: 0, stdout, stderr };
      } catch (error) {
        const e = error as { code: number; stdout: string; stderr: string };
        return { code: e.code, stdout: e.stdout, stderr: e.stderr };
      }
    },
    password: PASSWORD,
    login,
    member: async (role, input = {}) => {
      const memberEmail = randomEmail(role);
      const memberId = await createUser(database.db, memberEmail, PASSWORD);
      await addMembership(database.db, input.organizationId ?? org.id, memberId, role);
      return login({ email: memberEmail, ...(input.scopes ? { scopes: input.scopes } : {}) });
    },
    organizationId: org.id,
    projectId: project.id,
    key: key.key,
    keyId: key.id,
    otherTenant: async () => {
      const other = await createOrganization(database.db, 'Other organization');
      const otherProject = await createProject(database.db, { organizationId: other.id, name: 'Other', slug: 'other' });
      const otherKey = await createApiKey(database.db, { organizationId: other.id, name: 'other key' });
      return { organizationId: other.id, projectId: otherProject.id, key: otherKey.key };
    },
    newKey: (input = {}) => createApiKey(database.db, { organizationId: org.id, name: 'extra key', ...input }),
    close: async () => {
      await background?.stop();
      await app.close();
      await database.close();
      await fresh.drop();
    },
  };
}

/**
 * A value made once for the enclosing suite (beforeAll) and optionally disposed of (afterAll),
 * usable directly in the suite's tests.
 */
function suiteValue<T extends object>(make: () => Promise<T>, dispose?: (value: T) => Promise<void>): T {
  let current: T | undefined;
  beforeAll(async () => {
    current = await make();
  });
  if (dispose) afterAll(() => (current ? dispose(current) : undefined));
  return new Proxy({} as T, {
    get(_, property) {
      if (!current) throw new Error('A suite value is used before its suite made it');
      const value = current[property as keyof T];
      return typeof value === 'function' ? value.bind(current) : value;
    },
  });
}

/**
 * One app for the enclosing suite (with configuration overrides, or a function giving them once
 * earlier hooks have run), started before its tests and closed after them. The returned
 * object stands for that app; use it only inside tests and hooks registered after this call.
 */
export function useTestApp(dialect: Dialect, config: Partial<Config> | (() => Partial<Config>) = {}): TestApp {
  return suiteValue(
    () => startTestApp(dialect, typeof config === 'function' ? config() : config),
    (t) => t.close(),
  );
}

/** The test organization's owner, signed in once for the suite. */
export function useOwner(t: TestApp): Login {
  return suiteValue(() => t.login());
}
