import type { Generated } from 'kysely';

/**
 * Row shapes as Kysely sees them. JSON columns are written as JSON text on both dialects
 * and read back through `decodeJson` (SQLite returns text, PostgreSQL parsed json or jsonb).
 * Timestamps are RFC 3339 strings on both (see postgres-connections.ts for the PostgreSQL parser).
 */
type Json = string | unknown;
type Bool = number | boolean;
/** The id of the transaction that wrote a row: xid8 on PostgreSQL (read as text), always 0 on SQLite. */
type TransactionId = string | number;

export interface OrganizationsTable {
  id: string;
  name: string;
  created_at: string;
}
export interface ProjectsTable {
  id: string;
  organization_id: string;
  name: string;
  slug: string;
  description: string;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}
export interface UsersTable {
  id: Generated<number>;
  email: string;
  password_hash: string;
  created_at: string;
}
export interface MembershipsTable {
  organization_id: string;
  user_id: number;
  role: string;
  created_at: string;
}
export interface ApiKeysTable {
  id: Generated<number>;
  organization_id: string;
  project_id: string | null;
  name: string;
  prefix: string;
  key_hash: string;
  scopes: Json;
  tenant_id: string | null;
  end_user_id: string | null;
  created_by: number | null;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
}
export interface EndUsersTable {
  project_id: string;
  tenant_id: string;
  end_user_id: string;
  revision: number;
  created_at: string;
  updated_at: string;
}
export interface MemoriesTable {
  id: Generated<number>;
  project_id: string;
  tenant_id: string;
  end_user_id: string;
  text: string;
  tags: Json;
  is_summary: Bool;
  source: string | null;
  importance: number;
  metadata: Json;
  client_ref: string | null;
  session_id: string | null;
  speaker: string | null;
  dedupe_hash: string | null;
  seq: number;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
  /** Set when a resolved decision kept another memory over this one. */
  superseded_by: number | null;
  /** When it stops being readable, the expiry sweep then erasing it; never when null. */
  expires_at: string | null;
}
export interface MemoryHistoryTable {
  id: Generated<number>;
  project_id: string;
  memory_id: number;
  action: string;
  changes: Json | null;
  actor_type: string;
  actor_id: number | null;
  request_id: string | null;
  created_at: string;
}
export interface AuditLogTable {
  id: Generated<number>;
  organization_id: string;
  project_id: string | null;
  actor_type: string;
  actor_id: number | null;
  action: string;
  target_type: string;
  target_id: string | null;
  result: string;
  request_id: string | null;
  created_at: string;
  /** The writing transaction, set by the database; the sealer goes by it (core/audit-log.ts). */
  xid: Generated<TransactionId>;
}
/** The chain of an organization's audit rows, in the order the sealer chained them (position 1, 2, ...). */
export interface AuditSealsTable {
  organization_id: string;
  position: number;
  audit_id: number;
  prev_hash: string;
  hash: string;
  legacy: Generated<Bool>;
}
/** One row: every audit row before (xid, audit_id) in (xid, id) order is sealed, but those of open_xids (core/audit-log.ts). */
export interface AuditSealHorizonTable {
  id: number;
  xid: TransactionId;
  audit_id: number;
  open_xids: string;
}
export interface AuditChainHeadsTable {
  organization_id: string;
  last_hash: string;
  last_position: Generated<number>;
}
export interface OutboxEventsTable {
  id: Generated<number>;
  organization_id: string;
  project_id: string | null;
  type: string;
  payload: Json;
  created_at: string;
  dispatched_at: string | null;
  memory_id: number | null;
}
/** One row (migration 0021): moves with every change to what keys resolve to or who receives events. */
export interface CredentialsClockTable {
  generation: number;
}
export interface EventSubscriptionsTable {
  organization_id: string;
  type: string;
  project_id: string;
  subscriber: string;
}
export interface WebhookEndpointsTable {
  id: Generated<number>;
  organization_id: string;
  project_id: string;
  name: string;
  url: string;
  description: string;
  events: Json;
  retry_config: Json;
  signature_config: Json;
  status: string;
  disabled_reason: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: string | null;
  failing_since: string | null;
  consecutive_failures: Generated<number>;
  last_success_at: string | null;
  last_failure_at: string | null;
  created_at: string;
  updated_at: string;
}
export interface WebhookDeliveriesTable {
  id: Generated<number>;
  endpoint_id: number;
  message_id: string;
  event_type: string;
  memory_id: number | null;
  body: string;
  /** The pseudonym of the end user the event named (core/pseudonyms.ts, never the id), for erasing receivers' answers with the end user. */
  end_user_key: string | null;
  status: string;
  attempts: Generated<number>;
  next_step: Generated<number>;
  next_attempt_at: string | null;
  lease_until: string | null;
  created_at: string;
  updated_at: string;
}
export interface WebhookAttemptsTable {
  id: Generated<number>;
  delivery_id: number;
  endpoint_id: number;
  attempted_at: string;
  status_code: number | null;
  latency_ms: number;
  response_body: string | null;
  error: string | null;
  succeeded: Bool;
}
export interface JobsTable {
  id: Generated<number>;
  kind: string;
  project_id: string | null;
  payload: Json;
  status: string;
  progress: number;
  attempts: number;
  run_after: string;
  locked_until: string | null;
  result: Json | null;
  error: string | null;
  created_at: string;
  updated_at: string;
}
export interface SessionsTable {
  id: Generated<number>;
  user_id: number;
  scopes: Json;
  ip: string | null;
  user_agent: string | null;
  created_at: string;
  expires_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  revoked_reason: string | null;
  /** The organization the session was opened for; null when the user belonged to none. */
  organization_id: string | null;
}
export interface RefreshTokensTable {
  token_hash: string;
  session_id: number;
  created_at: string;
  spent_at: string | null;
}
export interface LoginThrottleTable {
  key: string;
  failures: number;
  window_started_at: string;
}
export interface IdempotencyKeysTable {
  principal: string;
  key_hash: string;
  fingerprint: string;
  status: number | null;
  response: string | null;
  created_at: string;
  locked_until: string;
  expires_at: string;
  /** Sealed JSON array of the results the request's writes committed (with them), for a retry after a crash. */
  committed: string | null;
  /** The id a grouped insert gave the row of the last committed result, which was sealed without it (http/idempotency.ts). */
  committed_id: number | null;
  /** Set when a memory or end user the stored answer named was erased (the answer is gone; a replay is 410 gone). */
  erased_at: string | null;
  /** The presence mark of the process that claimed the key (store/presence.ts), null when it had none. */
  claimer: string | null;
}
/** The memories and end user (hashed) a stored answer names, so that erasing them finds it by index. */
export interface IdempotencyAnswerSubjectsTable {
  subject: string;
  principal: string;
  key_hash: string;
  expires_at: string;
}
export interface OrganizationPlansTable {
  organization_id: string;
  plan: string;
  updated_at: string;
}
export interface UsageCountersTable {
  organization_id: string;
  period_start: string;
  requests: number;
}

export interface FeedbackTable {
  id: Generated<number>;
  project_id: string;
  tenant_id: string;
  end_user_id: string;
  memory_id: number;
  rating: number;
  query: string | null;
  comment: string | null;
  actor_type: string;
  actor_id: number | null;
  created_at: string;
  withdrawn_at: string | null;
}
export interface MemoryEmbeddingsTable {
  memory_id: number;
  embedder: string;
  project_id: string;
  vector: Buffer;
  created_at: string;
  text_hash: string | null;
}
export interface IndexSnapshotsTable {
  project_id: string;
  tenant_id: string;
  end_user_id: string;
  revision: number;
  embedder: string;
  format: number;
  memories: number;
  /** Empty from stored format 407 on (the pieces are rows of index_snapshot_pieces); the previous version's. */
  index_data: Buffer;
  doc_meta: Buffer;
  created_at: string;
}
export interface IndexSnapshotPiecesTable {
  project_id: string;
  tenant_id: string;
  end_user_id: string;
  piece: number;
  revision: number;
  length: number;
  data: Buffer;
}
export interface MemoryRelationsTable {
  id: Generated<number>;
  project_id: string;
  tenant_id: string;
  end_user_id: string;
  source_id: number;
  target_id: number;
  type: string;
  metadata: Json;
  created_at: string;
}
export interface InvitationsTable {
  id: Generated<number>;
  organization_id: string;
  email: string;
  role: string;
  token_hash: string;
  invited_by: number | null;
  created_at: string;
  expires_at: string;
  accepted_at: string | null;
  accepted_by: number | null;
  revoked_at: string | null;
  revoked_by: number | null;
}
export interface PasswordResetsTable {
  token_hash: string;
  user_id: number;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}
export interface TenantUsageTable {
  project_id: string;
  tenant_id: string;
  period: string;
  turns: number;
}

export interface MemoryModelFactsTable {
  memory_id: number;
  model: string;
  project_id: string;
  text_hash: string;
  facts: Json;
  created_at: string;
}
export interface OntologiesTable {
  project_id: string;
  document: Json;
  revision: number;
  reclassify_job_id: number | null;
  updated_at: string;
}
export interface DecisionResolutionsTable {
  id: Generated<number>;
  project_id: string;
  tenant_id: string;
  end_user_id: string;
  decision_id: number;
  older_memory_id: number;
  newer_memory_id: number;
  resolution: string;
  kept_memory_id: number | null;
  note: string | null;
  actor_type: string;
  actor_id: number | null;
  created_at: string;
}
export interface BlobsTable {
  key: string;
  size: number;
  chunk_bytes: number;
  sha256: string;
  created_at: string;
}
export interface BlobChunksTable {
  key: string;
  n: number;
  data: Buffer;
  /** `data` is the chunk's bytes deflated (raw DEFLATE), stored so when that made them smaller. */
  deflated: Generated<Bool>;
}

export interface UploadedFilesTable {
  id: Generated<number>;
  project_id: string;
  tenant_id: string;
  end_user_id: string;
  name: string;
  type: string;
  size: number;
  sha256: string | null;
  memory_ids: Json;
  job_id: number | null;
  created_at: string;
  updated_at: string;
}
export interface ConnectorConnectionsTable {
  id: Generated<number>;
  organization_id: string;
  project_id: string;
  provider: string;
  name: string;
  end_user_id: string;
  config: Json;
  credentials: string | null;
  state: string;
  state_reason: string | null;
  schedule_minutes: number | null;
  next_sync_at: string | null;
  cursor: Json | null;
  purging_since: string | null;
  created_at: string;
  updated_at: string;
}
export interface ConnectorSyncsTable {
  id: Generated<number>;
  project_id: string;
  connection_id: number;
  job_id: number | null;
  status: string;
  trigger: string;
  seen: Generated<number>;
  created: Generated<number>;
  updated: Generated<number>;
  deleted: Generated<number>;
  unchanged: Generated<number>;
  failed: Generated<number>;
  checkpoint: Json | null;
  cancel_requested: Generated<Bool>;
  error: string | null;
  started_at: string | null;
  finished_at: string | null;
  created_at: string;
  updated_at: string;
}
export interface ConnectorObjectsTable {
  connection_id: number;
  source_id: string;
  project_id: string;
  title: string | null;
  url: string | null;
  version: string | null;
  content_hash: string | null;
  memory_ids: Json;
  status: string;
  error: string | null;
  last_seen_sync: number | null;
  created_at: string;
  updated_at: string;
}
export interface ConnectorOauthStatesTable {
  state_hash: string;
  connection_id: number;
  project_id: string;
  actor: string;
  code_verifier: string | null;
  redirect_uri: string;
  expires_at: string;
  created_at: string;
}
export interface IntegrationSettingsTable {
  organization_id: string;
  provider: string;
  enabled: Bool;
  oauth_client: string | null;
  updated_at: string;
}
export interface ExportsTable {
  id: Generated<number>;
  organization_id: string;
  project_id: string;
  created_by: number | null;
  created_by_type: Generated<'user' | 'api_key'>;
  status: string;
  scope: Json;
  format: string;
  gzip: Bool;
  include: Json;
  rows_done: Generated<number>;
  rows_total: number | null;
  last_memory_id: Generated<number>;
  erasures: Generated<number>;
  blob_key: string | null;
  size: number | null;
  sha256: string | null;
  error: string | null;
  artifact_deleted_at: string | null;
  artifact_deleted_reason: string | null;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  completed_at: string | null;
  expires_at: string;
  deleted_at: string | null;
}
export interface ImportsTable {
  id: Generated<number>;
  organization_id: string;
  project_id: string;
  created_by: number | null;
  created_by_type: Generated<'user' | 'api_key'>;
  status: string;
  format: string;
  blob_key: string | null;
  bytes_total: number;
  bytes_done: Generated<number>;
  rows_done: Generated<number>;
  rows_created: Generated<number>;
  rows_skipped: Generated<number>;
  relations_created: Generated<number>;
  relations_skipped: Generated<number>;
  error: string | null;
  error_record: number | null;
  error_line: number | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
}

export interface DB {
  organizations: OrganizationsTable;
  projects: ProjectsTable;
  users: UsersTable;
  memberships: MembershipsTable;
  api_keys: ApiKeysTable;
  end_users: EndUsersTable;
  memories: MemoriesTable;
  memory_history: MemoryHistoryTable;
  audit_log: AuditLogTable;
  audit_chain_heads: AuditChainHeadsTable;
  audit_seals: AuditSealsTable;
  audit_seal_horizon: AuditSealHorizonTable;
  outbox_events: OutboxEventsTable;
  event_subscriptions: EventSubscriptionsTable;
  credentials_clock: CredentialsClockTable;
  jobs: JobsTable;
  feedback: FeedbackTable;
  memory_embeddings: MemoryEmbeddingsTable;
  index_snapshots: IndexSnapshotsTable;
  index_snapshot_pieces: IndexSnapshotPiecesTable;
  tenant_usage: TenantUsageTable;
  memory_relations: MemoryRelationsTable;
  sessions: SessionsTable;
  refresh_tokens: RefreshTokensTable;
  login_throttle: LoginThrottleTable;
  idempotency_keys: IdempotencyKeysTable;
  idempotency_answer_subjects: IdempotencyAnswerSubjectsTable;
  organization_plans: OrganizationPlansTable;
  usage_counters: UsageCountersTable;
  ontologies: OntologiesTable;
  memory_model_facts: MemoryModelFactsTable;
  decision_resolutions: DecisionResolutionsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  blobs: BlobsTable;
  blob_chunks: BlobChunksTable;
  uploaded_files: UploadedFilesTable;
  connector_connections: ConnectorConnectionsTable;
  connector_syncs: ConnectorSyncsTable;
  connector_objects: ConnectorObjectsTable;
  connector_oauth_states: ConnectorOauthStatesTable;
  integration_settings: IntegrationSettingsTable;
  exports: ExportsTable;
  imports: ImportsTable;
  invitations: InvitationsTable;
  password_resets: PasswordResetsTable;
}
