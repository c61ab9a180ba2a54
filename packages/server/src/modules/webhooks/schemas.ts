import { Type, type Static } from '@sinclair/typebox';

const Timestamp = Type.String({ format: 'date-time' });
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
const Id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });

/** Svix's schedule: immediately, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h after each failure. */
export const DEFAULT_SCHEDULE_SECONDS = [0, 5, 300, 1800, 7200, 18000, 36000, 36000];
export const DEFAULT_DISABLE_AFTER_SECONDS = 5 * 86_400;
export const DEFAULT_ROTATION_OVERLAP_SECONDS = 86_400;

export const RetryConfig = Type.Object(
  {
    schedule_seconds: Type.Optional(
      Type.Array(Type.Integer({ minimum: 0, maximum: 7 * 86_400 }), {
        minItems: 1,
        maxItems: 20,
        description:
          'Delay before each attempt: the first after the event, each next one after the failure before it. Default [0, 5, 300, 1800, 7200, 18000, 36000, 36000].',
      }),
    ),
    disable_after_seconds: Type.Optional(
      Type.Integer({
        minimum: 60,
        maximum: 90 * 86_400,
        description: 'An endpoint failing every attempt for this long is disabled (default 432000, 5 days).',
      }),
    ),
  },
  { additionalProperties: false },
);
export type RetryConfig = Required<Static<typeof RetryConfig>>;

export const SignatureConfig = Type.Object(
  {
    rotation_overlap_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 7 * 86_400,
        description: 'After a rotation the old secret keeps signing (both signatures sent) this long (default 86400).',
      }),
    ),
  },
  { additionalProperties: false },
);
export type SignatureConfig = Required<Static<typeof SignatureConfig>>;

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'https (http only when ENGRAM_WEBHOOK_ALLOW_HTTP); must resolve to public addresses',
});
const Description = Type.String({ maxLength: 2000 });
const Events = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  minItems: 1,
  maxItems: 100,
  uniqueItems: true,
  description: 'Event kinds from GET /org/webhooks/event-types',
});

export const NewEndpointBody = Type.Object(
  {
    name: Name,
    url: Url,
    description: Type.Optional(Description),
    events: Events,
    retry_config: Type.Optional(RetryConfig),
    signature_config: Type.Optional(SignatureConfig),
  },
  { additionalProperties: false },
);
export type NewEndpoint = Static<typeof NewEndpointBody>;

export const EndpointPatchBody = Type.Object(
  {
    name: Type.Optional(Name),
    url: Type.Optional(Url),
    description: Type.Optional(Description),
    events: Type.Optional(Events),
    retry_config: Type.Optional(RetryConfig),
    signature_config: Type.Optional(SignatureConfig),
  },
  { additionalProperties: false },
);
export type EndpointPatch = Static<typeof EndpointPatchBody>;

export const EndpointState = Type.Union([Type.Literal('enabled'), Type.Literal('paused'), Type.Literal('disabled')]);

export const Endpoint = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  url: Type.String(),
  description: Type.String(),
  events: Type.Array(Type.String()),
  enabled: Type.Boolean({ description: 'Whether deliveries are attempted now (state is enabled)' }),
  state: EndpointState,
  disabled_reason: Type.Union([Type.String(), Type.Null()]),
  project_id: Type.String(),
  retry_config: Type.Object({ schedule_seconds: Type.Array(Type.Integer()), disable_after_seconds: Type.Integer() }),
  signature_config: Type.Object({ rotation_overlap_seconds: Type.Integer() }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export const CreatedEndpoint = Type.Intersect([
  Endpoint,
  Type.Object({ secret: Type.String({ description: 'whsec_…: shown in this response only' }) }),
]);

export const EndpointParams = Type.Object({ endpoint_id: Id });
export const DeliveryParams = Type.Object({ endpoint_id: Id, delivery_id: Id });

export const RotatedSecret = Type.Object({
  secret: Type.String({ description: 'The new whsec_… secret: shown in this response only' }),
  previous_secret_expires_at: Timestamp,
});

export const Health = Type.Object({
  state: EndpointState,
  success_rate_24h: Type.Union([Type.Number(), Type.Null()], {
    description: 'Succeeded attempts / attempts in the last 24 h; null without attempts',
  }),
  p50_latency_ms_24h: Type.Union([Type.Integer(), Type.Null()]),
  attempts_24h: Type.Integer(),
  consecutive_failures: Type.Integer(),
  failing_since: NullableTimestamp,
  last_success_at: NullableTimestamp,
  last_failure_at: NullableTimestamp,
  pending_deliveries: Type.Integer(),
});

export const DeliveryStatus = Type.Union([
  Type.Literal('pending'),
  Type.Literal('succeeded'),
  Type.Literal('exhausted'),
]);

export const Delivery = Type.Object({
  id: Type.Integer(),
  endpoint_id: Type.Integer(),
  message_id: Type.String({ description: 'The webhook-id header: the same for every attempt' }),
  event_type: Type.String(),
  status: DeliveryStatus,
  attempts: Type.Integer(),
  next_attempt_at: NullableTimestamp,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export const Attempt = Type.Object({
  attempted_at: Timestamp,
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  latency_ms: Type.Integer(),
  response_body: Type.Union([Type.String(), Type.Null()], { description: 'The first 2 KiB of the response body' }),
  error: Type.Union([Type.String(), Type.Null()]),
  succeeded: Type.Boolean(),
});
export const DeliveryDetail = Type.Intersect([
  Delivery,
  Type.Object({
    payload: Type.Unknown({ description: 'The body as sent: {type, timestamp, data}' }),
    attempt_log: Type.Array(Attempt),
  }),
]);

export const DeliveryQuery = Type.Object(
  {
    status: Type.Optional(DeliveryStatus),
    event_type: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    since: Type.Optional(Timestamp),
    until: Type.Optional(Timestamp),
    offset: Type.Integer({ minimum: 0, default: 0 }),
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
  },
  { additionalProperties: false },
);
export const ReplayBody = Type.Object(
  { since: Type.Optional(Timestamp), until: Type.Optional(Timestamp) },
  { additionalProperties: false },
);
export const Replayed = Type.Object({ replayed: Type.Integer({ description: 'Exhausted deliveries queued again' }) });

export const EventTypeList = Type.Object({
  items: Type.Array(
    Type.Object({
      type: Type.String(),
      version: Type.Integer(),
      description: Type.String(),
      payload_schema: Type.Unknown(),
    }),
  ),
});
