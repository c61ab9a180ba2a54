import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { AppError, invalid, type ErrorBody, type ErrorCode } from '../core/errors.js';
import { validationError, type AjvError } from '../core/validation.js';
import type { Database } from '../store/database.js';
import { databaseFault, isUndefinedTable, schemaAbsent } from '../store/faults.js';

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
    // Multipart uploads (@fastify/multipart).
    case 'FST_REQ_FILE_TOO_LARGE':
      return new AppError('payload_too_large', 'The file is larger than the upload limit', 'file');
    case 'FST_FILES_LIMIT':
      return invalid('file', 'Send exactly one file');
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
    case 'FST_PROTO_VIOLATION':
      return invalid('body', 'The multipart form has too many or malformed parts');
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return new AppError('unsupported_media_type', 'Send the file as multipart/form-data', 'Content-Type');
  }
  if (error.name === 'SyntaxError' && error.statusCode === 400)
    return invalid('body', 'Request body is not valid JSON');
  return undefined;
}

/** How long a client waits before retrying a request the database could not serve. */
const DATABASE_RETRY_AFTER_S = '1';

/**
 * The database cannot serve now (down, unreachable, locked by another process, re-created empty) or
 * its disk is full: the caller may retry. A missing table is that only while the whole schema is
 * missing; otherwise it is a bug, answered 500 and logged as one.
 */
async function fromDatabaseFault(error: unknown, database: Database): Promise<AppError | undefined> {
  const fault = isUndefinedTable(error)
    ? (await schemaAbsent(database))
      ? 'unavailable'
      : undefined
    : databaseFault(error);
  switch (fault) {
    case 'unavailable':
      return new AppError(
        'database_unavailable',
        'The database is unavailable; retry after the Retry-After delay',
        undefined,
        { 'Retry-After': DATABASE_RETRY_AFTER_S },
      );
    case 'storage_full':
      return new AppError(
        'insufficient_storage',
        'The database has no room left to store this write (its disk is full); nothing was stored',
      );
  }
  return undefined;
}

/** One error path for every route: AppError, schema validation, framework errors, and the unexpected. */
export const errorHandling = fp(async (app: FastifyInstance, { database }: { database: Database }) => {
  app.setErrorHandler(
    async (error: FastifyError & { validation?: AjvError[]; validationContext?: string }, request, reply) => {
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
      const fault = await fromDatabaseFault(error, database);
      if (fault) {
        request.log.warn({ err: error }, fault.message);
        return send(reply.headers(fault.headers), request, fault.status, fault.code, fault.message);
      }
      request.log.error({ err: error }, 'unhandled error');
      return send(reply, request, 500, 'internal_error', 'Internal error; quote the request_id when reporting it');
    },
  );

  app.setNotFoundHandler((request, reply) =>
    send(reply, request, 404, 'not_found', `No route for ${request.method} ${request.url.split('?')[0]}`),
  );
});

/**
 * Errors the router raises before any hook runs (a malformed percent-encoding, an over-long path
 * parameter): answered in the same error shape, with the X-Request-ID the hooks would have set.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  reply.header('X-Request-ID', request.id);
  if (error.code === 'FST_ERR_BAD_URL' || error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return send(reply, request, 400, 'validation_error', 'The request path is not valid', 'path');
  }
  request.log.error({ err: error }, 'router error');
  return send(reply, request, 500, 'internal_error', 'Internal error; quote the request_id when reporting it');
}

export function errorBody(request: FastifyRequest, code: ErrorCode, message: string, field?: string): ErrorBody {
  return { error: { code, message, ...(field ? { field } : {}), request_id: request.id } };
}

function send(
  reply: FastifyReply,
  request: FastifyRequest,
  status: number,
  code: ErrorCode,
  message: string,
  field?: string,
) {
  return reply
    .status(status)
    .type('application/json')
    .send(errorBody(request, code, message, field));
}
