import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';

/** S3-compatible object storage for blobs: ENGRAM_BLOB_URL=s3://bucket/prefix plus endpoint, region and keys. */
export interface S3BlobConfig {
  kind: 's3';
  bucket: string;
  /** '' or ending in '/'. */
  prefix: string;
  /** http(s)://host[:port] of an S3-compatible service (path-style); absent: AWS (virtual-hosted). */
  endpoint?: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}
export type BlobConfig = { kind: 'database' } | S3BlobConfig;

/** What configuration says about the LLM (engine/llm builds the provider from it); null when none is configured (built-in methods only). */
export type LlmSettings = {
  kind: 'openai';
  baseUrl: string;
  model: string;
  apiKey?: string;
  timeoutMs: number;
  maxRetries: number;
} | null;

export interface PostgresConfig {
  dialect: 'postgres';
  url: string;
  /**
   * ENGRAM_DATABASE_DIRECT_URL: the same database reached without a transaction-mode pooler, for the
   * connections that need a session of their own (LISTEN, the process's presence lock); unset: `url`.
   */
  directUrl?: string;
  poolSize: number;
  /**
   * Named prepared statements and pipelined BEGIN/COMMIT (store/postgres-connections.ts#withNamedStatements):
   * 'auto' names statements unless the pool's start finds a transaction-mode pooler in front of the
   * database (or a statement meets one), false neither names nor pipelines.
   */
  preparedStatements: boolean | 'auto';
}

/** Typed, validated configuration read once from the environment (ENGRAM_*). */
export interface Config {
  dataDir: string;
  host: string;
  port: number;
  /** `postgres://…` selects PostgreSQL; anything else is a SQLite file path. */
  database: { dialect: 'sqlite'; path: string } | PostgresConfig;
  /** HTTP server processes sharing the port (node:cluster); 1 serves from this process. */
  httpProcesses: number;
  /** How long a starting process waits for an unreachable database before it gives up (store/faults.ts#whileDatabaseUnavailable). */
  databaseWaitSeconds: number;
  /** Whether `engram serve` also runs background jobs and chores in-process (worker.ts). */
  runJobs: boolean;
  /** ENGRAM_JOB_RETENTION_DAYS: finished jobs and connector syncs are deleted this long after (a connection's last sync stays). */
  jobRetentionDays: number;
  /**
   * ENGRAM_IMPORT_BATCH: records an import writes per transaction. Larger batches write each index page of
   * their end users once per more rows (SQLite's WAL, PostgreSQL's revision bumps); a batch holds its end users'
   * revision locks (and SQLite's one connection) while it is written.
   */
  importBatch: number;
  /** Deprecated settings in use, to print once at start-up. */
  warnings: string[];
  logLevel: string;
  bodyLimitBytes: number;
  trustProxy: boolean;
  /** Slow clients: a request (headers and body) must arrive within requestTimeoutMs (else 408), and one client address may hold at most maxConnectionsPerClient open connections (0: no cap). */
  http: { requestTimeoutMs: number; maxConnectionsPerClient: number };
  bootstrap: { email?: string; password?: string; apiKey?: string };
  retrieval: {
    /** builtin (offline, default) or an OpenAI-compatible /embeddings endpoint. */
    embedder:
      | { kind: 'builtin' }
      | { kind: 'openai'; baseUrl: string; model: string; apiKey?: string; dimensions?: number };
    indexCacheBytes: number;
    /** The common terms' context postings an index keeps between searches, as a share of its own bytes (0: none; engine/memory-index.ts). */
    indexContextCacheShare: number;
    /** Largest project that principal-scoped compose indexes whole. */
    projectIndexMaxMemories: number;
    /** End users with at least this many memories get their built index stored (modules/retrieval/snapshots.ts); 0: never. */
    indexSnapshotMinMemories: number;
    /** How often background upkeep brings large end users' stored indexes up to date (the `retrieval.snapshots` chore). */
    indexSnapshotIntervalMs: number;
    /** Indexes and searches on a thread of their own (modules/retrieval/thread.ts); default on with more than one core. */
    searchThread: boolean;
    /** How long that thread, having answered every call, stays awake for the next one while calls come this close together (µs; 0: it sleeps at once). */
    searchThreadSpinMicros: number;
  };
  tenant: { defaultMonthlyTurns: number };
  /** POST /memory/upload: the largest file (413 above) and the size from which a job ingests it (202). */
  upload: { maxBytes: number; backgroundFromBytes: number };
  /** How untrusted files (uploads, connector files) are read: on threads of their own, within these bounds (modules/ingest/reader.ts). */
  parse: {
    /** Bytes a file may inflate to (Flate streams of a PDF, entries of a DOCX), all together. */
    maxExpandedBytes: number;
    maxPages: number;
    /** Blocks (paragraphs, rows, records) a document may yield, and entries its zip may hold. */
    maxParts: number;
    /** The JavaScript heap of one reading thread. */
    maxHeapMb: number;
    timeoutMs: number;
    /** Files read at once, each on its own thread. */
    concurrency: number;
  };
  /** The SSRF guard's allow-list (core/outbound.ts): hosts, addresses or CIDR ranges that may be reached though not public. */
  outbound: { allow: string[] };
  /** Connectors that call a vendor's API (modules/connectors/providers). */
  connectors: ConnectorsConfig;
  /** An OpenAI-compatible chat-completions endpoint; null: built-in methods only. */
  llm: LlmSettings;
  /** End users whose derived intelligence views (graph, decisions, clusters) one process keeps. */
  intelligence: {
    cacheOwners: number;
    cacheBytes: number;
    currentFactMaxMemories: number;
    /** ENGRAM_LLM_FACTS: with an LLM configured, it also reads each memory's personal facts (default on). */
    modelFacts: boolean;
  };
  webhooks: {
    /** ENGRAM_WEBHOOK_ALLOW_HOSTS: hosts, addresses or CIDR ranges receivers may use although not public (SSRF exceptions). */
    allowHosts: string[];
    /** ENGRAM_WEBHOOK_ALLOW_HTTP: accept plain-http receiver URLs (default: https only). */
    allowHttp: boolean;
    /** One attempt's deadline: a 2xx within this is success. */
    timeoutMs: number;
    /** ENGRAM_WEBHOOK_RETENTION_DAYS: deliveries that ended (succeeded or exhausted) are deleted this long after. */
    retentionDays: number;
  };
  /** Where artifacts (exports) are kept: the database (default) or S3-compatible storage. */
  blobs: BlobConfig;
  /** How long export artifacts are kept (seconds). */
  exports: { ttlSeconds: number };
  /** ENGRAM_SECRET_KEY; when absent a key is generated once and kept in the data directory. */
  secretKey?: string;
  /** Tests only (ENGRAM_TEST_FAILPOINT): a crash point, e.g. `idempotency-after-commit` (see docs/architecture.md). */
  testFailpoint?: string;
  /** Shared rate-limit counters across processes when set. */
  redisUrl?: string;
  redisPrefix: string;
  rateLimit: { max: number; windowSeconds: number; loginMax: number };
  /** Base of the links Engram hands out (invitations, password resets): ENGRAM_PUBLIC_URL. */
  publicUrl: string;
  /** How long those links work: ENGRAM_INVITATION_TTL_HOURS (168), ENGRAM_PASSWORD_RESET_TTL_MINUTES (60). */
  links: { invitationTtlMs: number; resetTtlMs: number };
  /** ENGRAM_SMTP_URL: invitations and reset links are mailed too when set. */
  mail: { url?: string; from: string };
  /** ENGRAM_METRICS_TOKEN: GET /metrics answers only with it (Bearer); without it the route is off (404). */
  metricsToken?: string;
  auth: {
    accessTokenTtlSeconds: number;
    sessionTtlSeconds: number;
    loginMaxFailures: number;
    loginIpMaxFailures: number;
    loginWindowSeconds: number;
  };
}

/** The providers whose OAuth client and base URL come from ENGRAM_<NAME>_CLIENT_ID, _CLIENT_SECRET and _BASE_URL. */
export const VENDOR_CONNECTORS = ['slack', 'google_drive', 'granola'] as const;

export interface VendorSettings {
  clientId?: string;
  clientSecret?: string;
  /** Replaces the scheme, host and port of every vendor URL (a private deployment's proxy, or a test's local server). */
  baseUrl?: string;
}

export interface ConnectorsConfig {
  /** Where a provider sends the browser after consent (ENGRAM_OAUTH_REDIRECT_URL); registered with each provider app. */
  redirectUrl: string;
  vendors: Partial<Record<(typeof VENDOR_CONNECTORS)[number], VendorSettings>>;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}`);
  }
  return value;
}

function boolean<F extends boolean | 'auto' = boolean>(env: Env, name: string, fallback: F): boolean | F {
  const raw = env[name]?.toLowerCase();
  if (raw === undefined || raw === '' || (fallback === 'auto' && raw === 'auto')) return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false${fallback === 'auto' ? ' (or auto)' : ''}`);
}

export function loadConfig(env: Env = process.env): Config {
  const dataDir = resolve(env.ENGRAM_DATA_DIR || './data');
  const url = env.ENGRAM_DATABASE_URL || '';
  let database: Config['database'];
  if (/^postgres(ql)?:\/\//.test(url)) {
    const directUrl = env.ENGRAM_DATABASE_DIRECT_URL || '';
    if (directUrl !== '' && !/^postgres(ql)?:\/\//.test(directUrl)) {
      throw new ConfigError(
        'ENGRAM_DATABASE_DIRECT_URL must be a postgres:// URL (the database of ENGRAM_DATABASE_URL without the pooler)',
      );
    }
    database = {
      dialect: 'postgres',
      url,
      poolSize: integer(env, 'ENGRAM_DATABASE_POOL_SIZE', 10, 1, 500),
      preparedStatements: boolean(env, 'ENGRAM_DATABASE_PREPARED_STATEMENTS', 'auto'),
      ...(directUrl !== '' ? { directUrl } : {}),
    };
  } else if (url === '') {
    database = { dialect: 'sqlite', path: resolve(dataDir, 'engram.db') };
  } else {
    database = { dialect: 'sqlite', path: resolve(url.replace(/^(sqlite|file):(\/\/)?/, '')) };
  }
  const bootstrap = {
    email: env.ENGRAM_BOOTSTRAP_EMAIL || undefined,
    password: env.ENGRAM_BOOTSTRAP_PASSWORD || undefined,
    apiKey: env.ENGRAM_BOOTSTRAP_API_KEY || undefined,
  };
  if (bootstrap.apiKey !== undefined && !/^[\x21-\x7e]{20,200}$/.test(bootstrap.apiKey)) {
    throw new ConfigError('ENGRAM_BOOTSTRAP_API_KEY must be 20 to 200 printable ASCII characters without spaces');
  }
  if (bootstrap.password !== undefined && bootstrap.password.length < 8) {
    throw new ConfigError('ENGRAM_BOOTSTRAP_PASSWORD must be at least 8 characters');
  }
  const warnings: string[] = [];
  let httpProcesses = integer(env, 'ENGRAM_HTTP_PROCESSES', 1, 1, 64);
  if (!env.ENGRAM_HTTP_PROCESSES && env.ENGRAM_WORKERS) {
    // Renamed: "workers" now means background-job processes (`engram worker`). Kept for one release.
    httpProcesses = integer(env, 'ENGRAM_WORKERS', 1, 1, 64);
    warnings.push('ENGRAM_WORKERS is deprecated and will be removed in the next release; use ENGRAM_HTTP_PROCESSES');
  }
  const host = env.ENGRAM_HOST || '127.0.0.1';
  const port = integer(env, 'ENGRAM_PORT', 8080, 0, 65535);
  return {
    dataDir,
    host,
    port,
    database,
    httpProcesses,
    runJobs: boolean(env, 'ENGRAM_RUN_JOBS', true),
    jobRetentionDays: integer(env, 'ENGRAM_JOB_RETENTION_DAYS', 30, 1, 3650),
    importBatch: integer(env, 'ENGRAM_IMPORT_BATCH', 10_000, 100, 100_000),
    databaseWaitSeconds: integer(env, 'ENGRAM_DATABASE_WAIT_SECONDS', 60, 0, 86_400),
    warnings,
    logLevel: env.ENGRAM_LOG_LEVEL || 'info',
    bodyLimitBytes: integer(env, 'ENGRAM_BODY_LIMIT', 1024 * 1024, 1024, 100 * 1024 * 1024),
    trustProxy: boolean(env, 'ENGRAM_TRUST_PROXY', false),
    http: {
      requestTimeoutMs: integer(env, 'ENGRAM_REQUEST_TIMEOUT', 30, 1, 3_600) * 1000,
      maxConnectionsPerClient: integer(env, 'ENGRAM_MAX_CONNECTIONS_PER_CLIENT', 256, 0, 1_000_000),
    },
    bootstrap,
    retrieval: {
      embedder: embedderConfig(env),
      indexCacheBytes: integer(env, 'ENGRAM_INDEX_CACHE_MB', 512, 1, 1_000_000) * 1024 * 1024,
      indexContextCacheShare: integer(env, 'ENGRAM_INDEX_CONTEXT_CACHE_PERCENT', 300, 0, 10_000) / 100,
      projectIndexMaxMemories: integer(env, 'ENGRAM_PROJECT_INDEX_MAX_MEMORIES', 200_000, 1, 100_000_000),
      indexSnapshotMinMemories: integer(env, 'ENGRAM_INDEX_SNAPSHOT_MIN_MEMORIES', 10_000, 0, 100_000_000),
      indexSnapshotIntervalMs: integer(env, 'ENGRAM_INDEX_SNAPSHOT_INTERVAL', 30, 1, 86_400) * 1000,
      searchThread: boolean(env, 'ENGRAM_SEARCH_THREAD', availableParallelism() > 1),
      searchThreadSpinMicros: integer(env, 'ENGRAM_SEARCH_THREAD_SPIN_US', 2_000, 0, 100_000),
    },
    tenant: { defaultMonthlyTurns: integer(env, 'ENGRAM_V1_MONTHLY_TURNS', 100_000, 1, 1_000_000_000) },
    outbound: {
      allow: (env.ENGRAM_OUTBOUND_ALLOW ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    },
    connectors: connectorsConfig(
      env,
      httpUrl(env, 'ENGRAM_PUBLIC_URL') ?? `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    ),
    upload: {
      maxBytes: integer(env, 'ENGRAM_UPLOAD_MAX_BYTES', 25 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      backgroundFromBytes: integer(env, 'ENGRAM_UPLOAD_BACKGROUND_BYTES', 1024 * 1024, 0, 1024 * 1024 * 1024),
    },
    parse: {
      maxExpandedBytes: integer(
        env,
        'ENGRAM_PARSE_MAX_EXPANDED_BYTES',
        // 32 MiB: with 64, six bombs at once took server and reader to +462-610 MB; with 32, +421-460 (bench:faults).
        32 * 1024 * 1024,
        1024 * 1024,
        64 * 1024 * 1024 * 1024,
      ),
      maxPages: integer(env, 'ENGRAM_PARSE_MAX_PAGES', 5_000, 1, 10_000_000),
      maxParts: integer(env, 'ENGRAM_PARSE_MAX_PARTS', 10_000, 1, 100_000_000),
      maxHeapMb: integer(env, 'ENGRAM_PARSE_MAX_HEAP_MB', 128, 32, 65_536),
      timeoutMs: integer(env, 'ENGRAM_PARSE_TIMEOUT_MS', 60_000, 100, 3_600_000),
      concurrency: integer(env, 'ENGRAM_PARSE_CONCURRENCY', 1, 1, 256),
    },
    llm: llmConfig(env),
    intelligence: {
      cacheOwners: integer(env, 'ENGRAM_INTELLIGENCE_CACHE_USERS', 1000, 1, 10_000_000),
      cacheBytes: integer(env, 'ENGRAM_INTELLIGENCE_CACHE_MB', 256, 1, 1_000_000) * 1024 * 1024,
      currentFactMaxMemories: integer(env, 'ENGRAM_CURRENT_FACT_MAX_MEMORIES', 2000, 0, 10_000_000),
      modelFacts: boolean(env, 'ENGRAM_LLM_FACTS', true),
    },
    webhooks: {
      allowHosts: (env.ENGRAM_WEBHOOK_ALLOW_HOSTS ?? '')
        .split(',')
        .map((h) => h.trim())
        .filter(Boolean),
      allowHttp: boolean(env, 'ENGRAM_WEBHOOK_ALLOW_HTTP', false),
      timeoutMs: integer(env, 'ENGRAM_WEBHOOK_TIMEOUT_SECONDS', 15, 1, 60) * 1000,
      retentionDays: integer(env, 'ENGRAM_WEBHOOK_RETENTION_DAYS', 30, 1, 3650),
    },
    blobs: blobConfig(env),
    exports: { ttlSeconds: integer(env, 'ENGRAM_EXPORT_TTL', 7 * 86_400, 60, 365 * 86_400) },
    secretKey: secretKey(env),
    ...(env.ENGRAM_TEST_FAILPOINT ? { testFailpoint: env.ENGRAM_TEST_FAILPOINT } : {}),
    redisUrl: env.ENGRAM_REDIS_URL || undefined,
    redisPrefix: env.ENGRAM_REDIS_PREFIX || 'engram:',
    rateLimit: {
      max: integer(env, 'ENGRAM_RATE_LIMIT_MAX', 60_000, 1, 10_000_000),
      windowSeconds: integer(env, 'ENGRAM_RATE_LIMIT_WINDOW', 60, 1, 86_400),
      loginMax: integer(env, 'ENGRAM_RATE_LIMIT_LOGIN_MAX', 20, 1, 10_000_000),
    },
    publicUrl: httpUrl(env, 'ENGRAM_PUBLIC_URL') ?? `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    links: {
      invitationTtlMs: integer(env, 'ENGRAM_INVITATION_TTL_HOURS', 168, 1, 90 * 24) * 3_600_000,
      resetTtlMs: integer(env, 'ENGRAM_PASSWORD_RESET_TTL_MINUTES', 60, 5, 7 * 24 * 60) * 60_000,
    },
    mail: { url: smtpUrl(env), from: env.ENGRAM_SMTP_FROM || 'Engram <engram@localhost>' },
    metricsToken: metricsToken(env),
    auth: {
      accessTokenTtlSeconds: integer(env, 'ENGRAM_ACCESS_TOKEN_TTL', 900, 30, 86_400),
      sessionTtlSeconds: integer(env, 'ENGRAM_SESSION_TTL', 30 * 86_400, 300, 365 * 86_400),
      loginMaxFailures: integer(env, 'ENGRAM_LOGIN_MAX_FAILURES', 5, 1, 10_000),
      loginIpMaxFailures: integer(env, 'ENGRAM_LOGIN_IP_MAX_FAILURES', 50, 1, 1_000_000),
      loginWindowSeconds: integer(env, 'ENGRAM_LOGIN_WINDOW', 900, 10, 86_400),
    },
  };
}

function embedderConfig(env: Env): Config['retrieval']['embedder'] {
  const kind = env.ENGRAM_EMBEDDER || 'builtin';
  if (kind === 'builtin') return { kind };
  if (kind !== 'openai') throw new ConfigError('ENGRAM_EMBEDDER must be builtin or openai');
  const baseUrl = env.ENGRAM_EMBEDDER_BASE_URL || 'https://api.openai.com/v1';
  if (!/^https?:\/\//.test(baseUrl)) throw new ConfigError('ENGRAM_EMBEDDER_BASE_URL must be an http(s) URL');
  return {
    kind,
    baseUrl,
    model: env.ENGRAM_EMBEDDER_MODEL || 'text-embedding-3-small',
    ...(env.ENGRAM_EMBEDDER_API_KEY ? { apiKey: env.ENGRAM_EMBEDDER_API_KEY } : {}),
    ...(env.ENGRAM_EMBEDDER_DIMENSIONS ? { dimensions: integer(env, 'ENGRAM_EMBEDDER_DIMENSIONS', 0, 1, 16_384) } : {}),
  };
}

function llmConfig(env: Env): LlmSettings {
  const baseUrl = env.ENGRAM_LLM_BASE_URL || undefined;
  const model = env.ENGRAM_LLM_MODEL || undefined;
  if (baseUrl === undefined && model === undefined) return null;
  if (model === undefined) throw new ConfigError('ENGRAM_LLM_MODEL is required when ENGRAM_LLM_BASE_URL is set');
  const url = baseUrl ?? 'https://api.openai.com/v1';
  if (!/^https?:\/\//.test(url)) throw new ConfigError('ENGRAM_LLM_BASE_URL must be an http(s) URL');
  return {
    kind: 'openai',
    baseUrl: url,
    model,
    ...(env.ENGRAM_LLM_API_KEY ? { apiKey: env.ENGRAM_LLM_API_KEY } : {}),
    timeoutMs: integer(env, 'ENGRAM_LLM_TIMEOUT', 60, 1, 3_600) * 1000,
    maxRetries: integer(env, 'ENGRAM_LLM_MAX_RETRIES', 2, 0, 10),
  };
}

/** ENGRAM_BLOB_URL=s3://bucket/prefix selects S3; the keys come from their own variables, never the URL. */
function blobConfig(env: Env): BlobConfig {
  const url = env.ENGRAM_BLOB_URL || '';
  if (url === '' || url === 'database') return { kind: 'database' };
  const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(url);
  if (!match) throw new ConfigError('ENGRAM_BLOB_URL must be s3://bucket/prefix (or unset: artifacts in the database)');
  const accessKeyId = env.ENGRAM_BLOB_ACCESS_KEY_ID;
  const secretAccessKey = env.ENGRAM_BLOB_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) {
    throw new ConfigError(
      'ENGRAM_BLOB_ACCESS_KEY_ID and ENGRAM_BLOB_SECRET_ACCESS_KEY must be set with an s3:// ENGRAM_BLOB_URL',
    );
  }
  const endpoint = env.ENGRAM_BLOB_ENDPOINT || undefined;
  if (endpoint !== undefined && !/^https?:\/\/[^/]+\/?$/.test(endpoint)) {
    throw new ConfigError('ENGRAM_BLOB_ENDPOINT must be http(s)://host[:port]');
  }
  const prefix = match[2] ?? '';
  return {
    kind: 's3',
    bucket: match[1]!,
    prefix: prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`,
    region: env.ENGRAM_BLOB_REGION || 'us-east-1',
    accessKeyId,
    secretAccessKey,
    ...(endpoint ? { endpoint } : {}),
  };
}

function secretKey(env: Env): string | undefined {
  const value = env.ENGRAM_SECRET_KEY || undefined;
  if (value !== undefined && value.length < 32)
    throw new ConfigError('ENGRAM_SECRET_KEY must be at least 32 characters');
  return value;
}

function connectorsConfig(env: Env, publicUrl: string): ConnectorsConfig {
  const vendors: ConnectorsConfig['vendors'] = {};
  for (const name of VENDOR_CONNECTORS) {
    const prefix = `ENGRAM_${name.toUpperCase()}`;
    const settings: VendorSettings = {
      clientId: env[`${prefix}_CLIENT_ID`] || undefined,
      clientSecret: env[`${prefix}_CLIENT_SECRET`] || undefined,
      baseUrl: httpUrl(env, `${prefix}_BASE_URL`),
    };
    if (Boolean(settings.clientId) !== Boolean(settings.clientSecret))
      throw new ConfigError(`${prefix}_CLIENT_ID and ${prefix}_CLIENT_SECRET go together`);
    vendors[name] = Object.fromEntries(Object.entries(settings).filter(([, v]) => v !== undefined));
  }
  return {
    redirectUrl:
      httpUrl(env, 'ENGRAM_OAUTH_REDIRECT_URL') ?? `${publicUrl.replace(/\/$/, '')}/connectors/oauth/callback`,
    vendors,
  };
}

function httpUrl(env: Env, name: string): string | undefined {
  const value = env[name] || undefined;
  if (value !== undefined && !/^https?:\/\/[^\s]+$/.test(value))
    throw new ConfigError(`${name} must be an http(s) URL`);
  return value;
}

function smtpUrl(env: Env): string | undefined {
  const value = env.ENGRAM_SMTP_URL || undefined;
  if (value !== undefined && !/^smtps?:\/\/[^\s]+$/.test(value))
    throw new ConfigError('ENGRAM_SMTP_URL must be an smtp:// or smtps:// URL');
  return value;
}

function metricsToken(env: Env): string | undefined {
  const value = env.ENGRAM_METRICS_TOKEN || undefined;
  if (value !== undefined && !/^[\x21-\x7e]{16,256}$/.test(value))
    throw new ConfigError('ENGRAM_METRICS_TOKEN must be 16 to 256 printable ASCII characters');
  return value;
}
