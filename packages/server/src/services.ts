import { randomBytes } from 'node:crypto';
import type { Config } from './config.js';
import type { Credentials } from './core/context.js';
import { sealAuditChains } from './core/audit-log.js';
import { answerSubject, eraseStoredAnswers, purgeExpiredIdempotencyKeys } from './core/idempotency-keys.js';
import {
  eraseMemoryEvents,
  listEventTypes,
  purgeDispatchedEvents,
  renameEndUserInEvents,
  type OutboxDispatcher,
} from './core/events.js';
import { endUserPseudonyms, type Pseudonymize } from './core/pseudonyms.js';
import { createLlm, forgetWords, leaveBufferPool, type LlmProvider } from './engine/index.js';
import { createMailer, type Mailer } from './core/mailer.js';
import { JobHandlers, purgeFinishedJobs, renameEndUserInJobs } from './jobs/runner.js';
import type { Chore } from './jobs/schedule.js';
import { liveSession, TokenIssuer, touchSession } from './modules/auth/index.js';
import {
  findProject,
  forgetKey,
  membershipOf,
  projectOrganization,
  resolveKey,
  touchApiKey,
} from './modules/org/index.js';
import { monthlyTurnLimit } from './modules/billing/index.js';
import {
  createIntelligence,
  currentFactsFirst,
  eraseModelFacts,
  eraseResolutions,
  RECLASSIFY_JOB,
  reclassifyJob,
  type Intelligence,
} from './modules/intelligence/index.js';
import { EraseHooks, forgetExpired, type Owner } from './modules/memories/index.js';
import {
  exportJob,
  EXPORT_JOB,
  IMPORT_JOB,
  importJob,
  purgeDeletedArtifacts,
  sweepExports,
  renameEndUserInExports,
  withdrawArtifactsHolding,
} from './modules/exports/index.js';
import {
  createRetrieval,
  eraseDerivedData,
  eraseEndUserSnapshot,
  REFRESH_JOB,
  refreshEmbeddingsJob,
  type RetrievalEngine,
} from './modules/retrieval/index.js';
import { eraseSynthesisData } from './modules/synthesis/index.js';
import {
  eraseEndUserDeliveries,
  eraseMemoryDeliveries,
  fanOut,
  purgeEndedDeliveries,
  type WebhookSettings,
} from './modules/webhooks/index.js';
import type { BlobStore } from './store/blobs.js';
import { openBlobStore } from './store/blobs/open.js';
import { forgetLastQuery, type Database } from './store/database.js';
import {
  eraseSyncedObjectTitles,
  purgeFinishedSyncs,
  queueDueSyncs,
  SYNC_JOB,
  syncJobHandler,
  type SyncDeps,
} from './modules/connectors/index.js';
import {
  DocumentReader,
  eraseEndUserFiles,
  eraseForgottenFiles,
  UPLOAD_JOB,
  uploadJobHandler,
} from './modules/ingest/index.js';

/** What the service graph needs of the configuration: everything but where to listen and what to bootstrap. */
export type ServiceConfig = Omit<Config, 'dataDir' | 'host' | 'port' | 'database' | 'bootstrap'>;

/**
 * The service graph, built once per process from configuration and a database, with no HTTP in
 * it: the HTTP app (app.ts), the worker (worker.ts) and the CLI all run on it. Every job handler,
 * erase hook, chore and outbox dispatcher is registered here, explicitly.
 */
export interface Services {
  config: ServiceConfig;
  database: Database;
  /** The master secret (core/secret.ts): signs tokens and seals stored responses. */
  secretKey: Uint8Array;
  /** How places that outlive an end user's removal name them: a keyed hash per project (core/pseudonyms.ts). */
  pseudonymize: Pseudonymize;
  tokens: TokenIssuer;
  retrieval: RetrievalEngine;
  /** The configured OpenAI-compatible chat model, or null: the built-in methods (engine/llm/). */
  llm: LlmProvider | null;
  /** Graph, clusters, decisions and reports, derived from the change feed and cached per end user. */
  intelligence: Intelligence;
  /** Where artifacts and uploaded files live (the database or S3-compatible storage). */
  blobs: BlobStore;
  /** Reads untrusted files (uploads, connector files) on threads of their own (modules/ingest/reader.ts). */
  reader: DocumentReader;
  /** Background job kinds and their handlers (jobs/runner.ts runs them). */
  jobs: JobHandlers;
  /** What forgetting a memory must also erase, in the same transaction. */
  erase: EraseHooks;
  /** Takers of outbox events (webhooks fan them out into deliveries), run by the delivery loop (worker.ts). */
  outboxDispatchers: OutboxDispatcher[];
  /** Webhook signing and receiver policy. */
  webhooks: WebhookSettings;
  /** Periodic upkeep run by whichever process runs background work. */
  chores: Chore[];
  /** The event catalogue, for the webhook "list event types" operation. */
  eventTypes: typeof listEventTypes;
  /** Outgoing mail when ENGRAM_SMTP_URL is set (invitations, password-reset links); null otherwise. */
  mailer: Mailer | null;
  /** What connections and their syncs need of the graph (the connectors routes and the sync job). */
  connectors: SyncDeps;
  /** Keys, sessions and memberships as authentication reads them (http/auth.ts), from the modules that own them. */
  credentials: Credentials;
  /** The /v1 per-tenant monthly turn allowance of an organization. */
  monthlyTurnAllowance(organizationId: string): Promise<number>;
}

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

export function buildServices({
  config,
  database,
  secretKey,
}: {
  config: ServiceConfig;
  database: Database;
  secretKey?: Uint8Array;
}): Services {
  const secret = secretKey ?? randomBytes(32);
  const engine = createRetrieval(database, config.retrieval);
  const llm = createLlm(config.llm);
  const intelligence = createIntelligence(
    database,
    config.intelligence.cacheOwners,
    config.intelligence.cacheBytes,
    llm && config.intelligence.modelFacts ? { llm } : null,
  );
  // Queries answer the current fact first: the graph reorders what the engine ranked (intelligence/current.ts).
  const retrieval: RetrievalEngine = {
    ...engine,
    retrieval: currentFactsFirst(engine.retrieval, intelligence, database, config.intelligence.currentFactMaxMemories),
  };

  const blobs = openBlobStore(config.blobs, database);

  // Forgetting withdraws export artifacts holding the memories in its transaction; their bytes go
  // right after it commits (and at every sweep, should this process stop first).
  const purgeArtifacts = () => void purgeDeletedArtifacts(database, blobs).catch(() => {});
  const pseudonymize = endUserPseudonyms(secret);
  const erase = new EraseHooks(pseudonymize);
  erase.register(eraseDerivedData);
  erase.register(eraseSynthesisData);
  erase.register(eraseResolutions);
  // The chat model's readings of the memories, and of a summary rewritten without them (read from its old text).
  erase.register((trx, ids, erasure) => eraseModelFacts(trx, [...ids, ...erasure.rewritten]));
  // After eraseSynthesisData: the summaries it rewrote (erasure.rewritten) lose their earlier copies too.
  erase.register((trx, ids, erasure) => eraseMemoryEvents(trx, ids, erasure.rewritten));
  erase.register((trx, ids, erasure) => eraseMemoryDeliveries(trx, ids, erasure.rewritten));
  // Stored idempotent answers showing the memories (or a summary rewritten without them) are erased; a replay is 410.
  erase.register((trx, ids, erasure) =>
    eraseStoredAnswers(trx, [...ids, ...erasure.rewritten].map(answerSubject.memory), erasure.effects.now),
  );
  // A synced object's title and URL (the source's content) go with its memories; the next sync reads them again.
  erase.register(eraseSyncedObjectTitles(database));
  erase.registerEndUser((trx, owner, _pseudonym, now) =>
    eraseStoredAnswers(trx, [answerSubject.endUser(pseudonymize, owner)], now),
  );
  erase.registerEndUser(eraseEndUserFiles);
  // What must outlive the end user but named them by id names their pseudonym instead (docs/api.md, "What
  // forgetting removes"); their tombstones and revision row follow last, in the purge itself (memories).
  erase.registerEndUser((trx, owner, pseudonym) => eraseEndUserDeliveries(trx, owner.endUserId, pseudonym));
  erase.registerEndUser((trx, owner, pseudonym) =>
    renameEndUserInEvents(trx, owner.projectId, owner.endUserId, pseudonym),
  );
  erase.registerEndUser((trx, owner, pseudonym) =>
    renameEndUserInJobs(trx, owner.projectId, owner.endUserId, pseudonym),
  );
  erase.registerEndUser((trx, owner, pseudonym) =>
    renameEndUserInExports(trx, owner.projectId, owner.endUserId, pseudonym),
  );
  erase.registerEndUser(eraseEndUserSnapshot);
  erase.register(eraseForgottenFiles);
  // What this process holds in memory of the forgotten, once the erasure commits: the owner's index (on the search
  // thread when there is one) and intelligence view, and each thread's cache of words, last RegExp match, last
  // statement's parameters, SQLite page cache and Buffer pool (docs/architecture.md, "Erasure in memory"). A purge
  // lets go of the owner whole.
  const forgottenInMemory = (owner: Owner, purged: boolean, ids?: ReadonlySet<number>) => {
    forgetWords();
    forgetLastQuery(database);
    leaveBufferPool();
    void retrieval.cache.forgotten(owner, purged).catch(() => undefined);
    void intelligence.forgotten(owner, purged, ids).catch(() => undefined);
  };
  erase.register(async (_trx, ids, { effects, owner, purging, rewritten }) => {
    if (!purging) effects.afterCommit(() => forgottenInMemory(owner, false, new Set([...ids, ...rewritten])));
  });
  erase.registerEndUser(async (_trx, owner, _pseudonym, _now, effects) =>
    effects.afterCommit(() => forgottenInMemory(owner, true)),
  );
  erase.register(async (trx, ids, erasure) => {
    if (await withdrawArtifactsHolding(trx, database.dialect, [...ids, ...erasure.rewritten]))
      erasure.effects.afterCommit(purgeArtifacts);
  });

  // SQLite: the WAL's frames from before the erasure are checkpointed and truncated away in the background.
  erase.register(async () => database.erased());
  erase.registerEndUser(async () => database.erased());

  const jobs = new JobHandlers();
  jobs.register(REFRESH_JOB, refreshEmbeddingsJob(database, retrieval));
  jobs.register(RECLASSIFY_JOB, reclassifyJob(database, intelligence));
  jobs.register(EXPORT_JOB, exportJob(database, blobs));
  jobs.register(IMPORT_JOB, importJob(database, blobs, config.importBatch));
  const reader = new DocumentReader(config.parse);
  jobs.register(UPLOAD_JOB, uploadJobHandler({ database, blobs, erase, reader }));
  const connectors = {
    database,
    jobs,
    secret,
    outbound: config.outbound,
    erase,
    connectors: config.connectors,
    reader,
  };
  jobs.register(SYNC_JOB, syncJobHandler(connectors));

  const outboxDispatchers: OutboxDispatcher[] = [fanOut(pseudonymize)];
  const chores: Chore[] = [
    // Writes append audit rows unchained; this chains the committed ones (core/audit-log.ts).
    { name: 'audit.seal', everyMs: 1000, run: () => sealAuditChains(database) },
    { name: 'idempotency-keys.purge', everyMs: 10 * MINUTE, run: () => purgeExpiredIdempotencyKeys(database.db) },
    { name: 'outbox.retention', everyMs: 60 * MINUTE, run: () => purgeDispatchedEvents(database.db) },
    {
      name: 'webhooks.retention',
      everyMs: 60 * MINUTE,
      run: () =>
        purgeEndedDeliveries(database, new Date(Date.now() - config.webhooks.retentionDays * DAY).toISOString()),
    },
    {
      name: 'jobs.retention',
      everyMs: 60 * MINUTE,
      run: () => purgeFinishedJobs(database.db, new Date(Date.now() - config.jobRetentionDays * DAY).toISOString()),
    },
    {
      name: 'connectors.retention',
      everyMs: 60 * MINUTE,
      run: () => purgeFinishedSyncs(database.db, new Date(Date.now() - config.jobRetentionDays * DAY).toISOString()),
    },
    { name: 'exports.sweep', everyMs: MINUTE, run: () => sweepExports(database, blobs) },
    // Expired memories are already gone from every read; this erases them as forgetting does (issue 54.9).
    {
      name: 'memories.expiry',
      everyMs: 30_000,
      run: () => forgetExpired(database, erase, (projectId) => projectOrganization(database.db, projectId)),
    },
    // Each due connection is claimed with a conditional update, so one process queues its sync.
    { name: 'connectors.schedule', everyMs: 30_000, run: () => queueDueSyncs(connectors) },
    // Large end users' indexes, stored so that first queries load them (modules/retrieval/snapshots.ts).
    {
      name: 'retrieval.snapshots',
      everyMs: config.retrieval.indexSnapshotIntervalMs,
      run: () => retrieval.cache.refreshLargeOwners(),
      perProcess: true,
    },
  ];

  const tokens = new TokenIssuer(secret, config.auth.accessTokenTtlSeconds);
  const credentials: Credentials = {
    resolveKey: (presented, requestedProjectId, checksClock) =>
      resolveKey(database, presented, requestedProjectId, checksClock),
    touchKey: (key) => touchApiKey(database.db, key),
    forgetKey: (presented, requestedProjectId) => forgetKey(database, presented, requestedProjectId),
    session: async (token) => {
      const claims = await tokens.verify(token);
      return claims && liveSession(database.db, claims);
    },
    touchSession: (session) => touchSession(database.db, session),
    membership: (userId, organizationId, db = database.db) => membershipOf(db, userId, organizationId),
    findProject: (organizationId, projectId) => findProject(database.db, organizationId, projectId),
  };

  return {
    config,
    database,
    secretKey: secret,
    pseudonymize,
    tokens,
    retrieval,
    llm,
    intelligence,
    blobs,
    reader,
    jobs,
    erase,
    connectors,
    credentials,
    outboxDispatchers,
    chores,
    eventTypes: listEventTypes,
    mailer: createMailer(config.mail),
    webhooks: { secretKey: secret, ...config.webhooks },
    // The plan's allowance; plans without one (self-hosted) use the configured default.
    monthlyTurnAllowance: async (organizationId) =>
      (await monthlyTurnLimit(database.db, organizationId)) ?? config.tenant.defaultMonthlyTurns,
  };
}
