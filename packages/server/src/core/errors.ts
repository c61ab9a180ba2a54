/** The error codes of the wire contract (spec section 7, plus the conventions in docs/api.md). */
export type ErrorCode =
  | 'validation_error'
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'gone'
  | 'range_not_satisfiable'
  | 'idempotency_key_reused'
  | 'idempotency_in_progress'
  | 'payload_too_large'
  | 'request_timeout'
  | 'headers_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'quota_exceeded'
  | 'internal_error'
  | 'unavailable'
  | 'database_unavailable'
  | 'insufficient_storage';

const statusOf: Record<ErrorCode, number> = {
  validation_error: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  gone: 410,
  range_not_satisfiable: 416,
  idempotency_key_reused: 422,
  idempotency_in_progress: 409,
  payload_too_large: 413,
  request_timeout: 408,
  headers_too_large: 431,
  unsupported_media_type: 415,
  rate_limited: 429,
  quota_exceeded: 429,
  internal_error: 500,
  unavailable: 503,
  database_unavailable: 503,
  insufficient_storage: 507,
};

/** An error meant for the caller: its message and field are safe to show. */
export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly field?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.status = statusOf[code];
  }
}

export const invalid = (field: string, message: string) => new AppError('validation_error', message, field);
export const notFound = (what = 'Resource') => new AppError('not_found', `${what} not found`);
export const forbidden = (message: string) => new AppError('forbidden', message);
export const unauthenticated = (message: string) =>
  new AppError('unauthenticated', message, undefined, { 'WWW-Authenticate': 'ApiKey header="X-API-Key", Bearer' });

export interface ErrorBody {
  error: { code: ErrorCode; message: string; field?: string; request_id: string };
}
