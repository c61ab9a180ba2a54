import { Type } from '@sinclair/typebox';

const DateTime = Type.String({ format: 'date-time' });
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const ConnectionParams = Type.Object({ connection_id: Type.Integer({ minimum: 1 }) });
export const SyncParams = Type.Object({ sync_id: Type.Integer({ minimum: 1 }) });
export const ProviderParams = Type.Object({ provider: Type.String({ minLength: 1 }) });

export const Provider = Type.Object({
  name: Type.String(),
  title: Type.String(),
  description: Type.String(),
  auth_kind: Type.String({ description: 'none | access_keys | api_key | oauth2' }),
  config_schema: Type.Unknown({ description: 'JSON Schema of the configuration' }),
  credentials_schema: Type.Unknown({ description: 'JSON Schema of the credentials, or null' }),
  capabilities: Type.Array(Type.String()),
});
export const Integration = Type.Intersect([Provider, Type.Object({ enabled: Type.Boolean() })]);

export const Sync = Type.Object({
  id: Type.Integer(),
  connection_id: Type.Integer(),
  status: Type.String({ description: 'queued | running | succeeded | failed | cancelled' }),
  trigger: Type.String({ description: 'manual | schedule' }),
  cancel_requested: Type.Boolean(),
  progress: Type.Object({
    seen: Type.Integer(),
    created: Type.Integer(),
    updated: Type.Integer(),
    deleted: Type.Integer(),
    unchanged: Type.Integer(),
    failed: Type.Integer(),
  }),
  error: Nullable(Type.String()),
  started_at: Nullable(DateTime),
  finished_at: Nullable(DateTime),
  created_at: DateTime,
});

export const Connection = Type.Object({
  id: Type.Integer(),
  provider: Type.String(),
  name: Type.String(),
  end_user_id: Type.String({ description: 'The end user whose memories the synced content becomes' }),
  state: Type.String({
    description:
      'active | error | needs_consent (oauth2, before consent) | needs_repair (oauth2, consent revoked: POST …/repair)',
  }),
  state_reason: Nullable(Type.String()),
  has_credentials: Type.Boolean({ description: 'Credentials are stored (encrypted); they are never returned' }),
  schedule_minutes: Type.Union([Type.Integer(), Type.Null()]),
  next_sync_at: Nullable(DateTime),
  created_at: DateTime,
  updated_at: DateTime,
  last_sync: Type.Union([Sync, Type.Null()]),
});

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Schedule = Type.Union([
  Type.Integer({ minimum: 5, maximum: 10_080, description: 'Minutes between scheduled syncs' }),
  Type.Null(),
]);
const Credentials = Type.Record(Type.String(), Type.Unknown(), {
  description: "The provider's credentials (see its credentials_schema)",
});

export const NewConnectionBody = Type.Object(
  {
    provider: Type.String({ minLength: 1, maxLength: 64 }),
    name: Name,
    config: Type.Record(Type.String(), Type.Unknown(), {
      description: "What to read (see the provider's config_schema)",
    }),
    credentials: Type.Optional(Credentials),
    end_user_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 256, description: 'Default: connector-<provider>' }),
    ),
    schedule_minutes: Type.Optional(Schedule),
  },
  { additionalProperties: false },
);

export const ConnectionPatchBody = Type.Object(
  {
    name: Type.Optional(Name),
    credentials: Type.Optional(Credentials),
    schedule_minutes: Type.Optional(Schedule),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const ConfigurationPage = Type.Object({
  connection_id: Type.Integer(),
  provider: Type.String(),
  schema: Type.Unknown(),
  values: Type.Record(Type.String(), Type.Unknown()),
});
export const ConfigurationBody = Type.Object(
  { values: Type.Record(Type.String(), Type.Unknown()) },
  { additionalProperties: false },
);

export const SyncedObject = Type.Object({
  source_id: Type.String(),
  title: Nullable(Type.String()),
  url: Nullable(Type.String()),
  version: Nullable(Type.String()),
  content_hash: Nullable(Type.String()),
  memory_ids: Type.Array(Type.Integer()),
  status: Type.String({ description: 'synced | failed | deleted' }),
  error: Nullable(Type.String()),
  created_at: DateTime,
  updated_at: DateTime,
});
export const ObjectsQuery = Type.Object(
  {
    offset: Type.Integer({ minimum: 0, default: 0 }),
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
    status: Type.Optional(Type.Union([Type.Literal('synced'), Type.Literal('failed'), Type.Literal('deleted')])),
  },
  { additionalProperties: false },
);

const Counts = Type.Record(Type.String(), Type.Integer());
export const Insights = Type.Object({
  connections: Type.Object({ total: Type.Integer(), by_state: Counts }),
  objects: Type.Object({ total: Type.Integer(), by_status: Counts }),
  memories: Type.Integer({ description: 'Live memories brought in by connectors' }),
  syncs: Type.Object({ total: Type.Integer(), by_status: Counts }),
  last_runs: Type.Array(Sync),
});

export const Overview = Type.Object({
  project_id: Type.String(),
  integrations: Type.Array(
    Type.Object({
      provider: Type.String(),
      title: Type.String(),
      enabled: Type.Boolean(),
      connections: Type.Integer(),
    }),
  ),
  connections: Type.Array(Connection),
});

export const Purged = Type.Object({ id: Type.Integer(), memories_forgotten: Type.Integer() });
export const Removed = Type.Object({ id: Type.Integer(), removed: Type.Boolean(), memories_forgotten: Type.Integer() });

export const Consent = Type.Object({
  authorization_url: Type.String({ description: "The provider's consent page; send the user's browser there" }),
  state: Type.String({
    description: 'Single use, bound to the caller and the connection; the provider hands it back with the code',
  }),
  redirect_uri: Type.String({ description: 'Where the provider sends the browser back (ENGRAM_OAUTH_REDIRECT_URL)' }),
  expires_at: DateTime,
});
export const CallbackBody = Type.Object(
  {
    state: Type.String({ minLength: 1, maxLength: 512 }),
    code: Type.Optional(
      Type.String({ minLength: 1, maxLength: 4096, description: 'The code the provider added to the redirect' }),
    ),
    error: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: "The provider's error instead of a code (access_denied: the user refused)",
      }),
    ),
  },
  { additionalProperties: false },
);
export const Repaired = Type.Intersect(
  [
    Connection,
    Type.Object({
      consent: Type.Optional(Consent),
    }),
  ],
  { description: 'The connection; with `consent` when its consent is gone and must be given again' },
);

export const OAuthClientBody = Type.Object(
  {
    client_id: Type.String({ minLength: 1, maxLength: 512 }),
    client_secret: Type.String({ minLength: 1, maxLength: 1024, description: 'Stored encrypted, never returned' }),
  },
  { additionalProperties: false },
);
export const OAuthClient = Type.Object({
  provider: Type.String(),
  client_id: Type.Union([Type.String(), Type.Null()], {
    description: 'The client consent uses; null: none (consent answers 503)',
  }),
  source: Type.Union([Type.Literal('organization'), Type.Literal('server'), Type.Null()], {
    description: 'organization: set here; server: ENGRAM_<PROVIDER>_CLIENT_ID',
  }),
});
