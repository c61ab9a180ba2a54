export {
  ServiceClient,
  type ServiceClientOptions,
  type AddManyResult,
  type AddMemory,
  type ListQuery,
  type Memory,
  type MemoryFilters,
} from './service.js';
export { ControlClient, type ControlClientOptions, type Tokens } from './control.js';
export {
  EngramError,
  ValidationError,
  AuthenticationError,
  PermissionError,
  NotFoundError,
  ConflictError,
  RateLimitError,
  Transport,
  type CallOptions,
  type TransportOptions,
  type OperationId,
  type Body,
  type Query,
  type Result,
  type Item,
} from './transport.js';
export { verifyWebhook, WebhookVerificationError, type WebhookEvent } from './webhooks.js';
export type { components, operations, paths } from './generated/openapi.js';
