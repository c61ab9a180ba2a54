import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { validationError } from './validation.js';

/** The error codes of the wire contract (spec section 7, plus the conventions in docs/api.md). */
export type ErrorCode =
  | 'validation_error'
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'idempotency_key_reused'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'quota_exceeded'
  | 'internal_error'
  | 'unavailable';

const statusOf: Record<ErrorCode, number> = {
  validation_error: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  idempotency_key_reused: 422,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  quota_exceeded: 429,
  internal_error: 500,
  unavailable: 503,
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

export function errorBody(request: FastifyRequest, code: ErrorCode, message: string, field?: string): ErrorBody {
  return { error: { code, message, ...(field ? { field } : {}), request_id: request.id } };
}

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** Field path of a validation error: `text`, `items/3/text`; headers and query keep their own names. */
export function fieldOf(error: AjvError, context?: string): string {
  const path = error.instancePath.replace(/^\//, '').split('/').filter(Boolean);
  if (error.keyword === 'required') path.push(String(error.params.missingProperty));
  if (error.keyword === 'additionalProperties') path.push(String(error.params.additionalProperty));
  if (context === 'headers' && path.length > 0) {
    path[0] = path[0]!.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase()).replace(/-Id$/, '-ID');
  }
  return path.join('/') || context || 'body';
}

export function describeValidation(error: AjvError, field: string): string {
  switch (error.keyword) {
    case 'required':
      return `${field} is required`;
    case 'additionalProperties':
      return `${field} is not a recognised field`;
    case 'type':
      return `${field} must be of type ${String(error.params.type)}`;
    default:
      return `${field} ${error.message ?? 'is invalid'}`;
  }
}

function fromFastifyError(error: FastifyError): AppError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return invalid('body', 'Request body is not valid JSON');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return invalid('body', 'Request body is empty; send a JSON document');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large', 'Request body is too large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new AppError('unsupported_media_type', 'Content-Type must be application/json');
  }
  if (error.name === 'SyntaxError' && error.statusCode === 400) return invalid('body', 'Request body is not valid JSON');
  return undefined;
}

/** One error path for every route: AppError, schema validation, framework errors, and the unexpected. */
export const errorHandling = fp(async (app: FastifyInstance) => {
  app.setErrorHandler((error: FastifyError & { validation?: AjvError[]; validationContext?: string }, request, reply) => {
    if (error instanceof AppError) {
      return send(reply.headers(error.headers), request, error.status, error.code, error.message, error.field);
    }
    if (error.validation && error.validation.length > 0) {
      const e = validationError(error.validation as never, error.validationContext);
      return send(reply, request, 400, 'validation_error', e.message, e.field);
    }
    const known = fromFastifyError(error);
    if (known) return send(reply, request, known.status, known.code, known.message, known.field);
    if (error.statusCode === 429) {
      return send(reply, request, 429, 'rate_limited', 'Too many requests; retry after the Retry-After delay');
    }
    request.log.error({ err: error }, 'unhandled error');
    return send(reply, request, 500, 'internal_error', 'Internal error; quote the request_id when reporting it');
  });

  app.setNotFoundHandler((request, reply) =>
    send(reply, request, 404, 'not_found', `No route for ${request.method} ${request.url.split('?')[0]}`),
  );
});

function send(reply: FastifyReply, request: FastifyRequest, status: number, code: ErrorCode, message: string, field?: string) {
  return reply.status(status).type('application/json').send(errorBody(request, code, message, field));
}
