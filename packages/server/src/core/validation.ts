import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { invalid, type AppError } from './errors.js';
import { PSEUDONYM_PREFIX } from './pseudonyms.js';

/**
 * Bodies are validated strictly: no type coercion and no silent removal of unknown fields,
 * so `"importance": "0.5"` and `"txet"` are both 400s naming the field. Query strings and
 * headers arrive as text, so they are coerced.
 */
const options = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false } as const;
export const bodyAjv = new Ajv.default({ ...options, coerceTypes: false });
export const textAjv = new Ajv.default({ ...options, coerceTypes: 'array' });
for (const ajv of [bodyAjv, textAjv]) {
  ajv.addFormat('date-time', {
    type: 'string',
    validate: (s: string) =>
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(s) && !Number.isNaN(Date.parse(s)),
  });
}

/** The first error of a failed validation, as the 400 every route answers. */
export function validationError(errors: ErrorObject[] | null | undefined, context?: string): AppError {
  // An unknown field explains the other errors (a misspelt "txt" also leaves "text" missing), so name it first;
  // then a missing field, which is more precise than an object-level rule such as minProperties.
  const first =
    errors?.find((e) => e.keyword === 'additionalProperties') ??
    errors?.find((e) => e.keyword === 'required') ??
    errors?.[0];
  if (!first) return invalid(context ?? 'body', 'Invalid request');
  const field = fieldOf(first, context);
  return invalid(field, describeValidation(first, field));
}

export function compileBody<T>(schema: object): ValidateFunction<T> {
  return bodyAjv.compile<T>(schema);
}

export interface AjvError {
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
    path[0] = path[0]!
      .replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase())
      .replace(/-Id$/, '-ID');
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

const END_USER_ID = /^[^\x00-\x1f\x7f]{1,256}$/;
const LOOKS_LIKE_EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

/**
 * An end-user id is opaque and stable: 1 to 256 characters, no control characters, not an e-mail address, and
 * not beginning `eu~`, which marks the pseudonym of a removed end user (core/pseudonyms.ts) wherever one is stored.
 */
export function validateEndUserId(value: string, field: string): string {
  if (!END_USER_ID.test(value)) throw invalid(field, `${field} must be 1 to 256 characters without control characters`);
  if (value.startsWith(PSEUDONYM_PREFIX))
    throw invalid(
      field,
      `${field} must not begin with ${PSEUDONYM_PREFIX} (reserved for removed end users' pseudonyms)`,
    );
  if (LOOKS_LIKE_EMAIL.test(value)) {
    throw invalid(field, `${field} must be an opaque stable id, not an e-mail address`);
  }
  return value;
}
