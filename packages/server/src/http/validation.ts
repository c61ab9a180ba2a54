import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';
import { invalid, type AppError } from './errors.js';
import { checkTextInput } from './input.js';

/**
 * Bodies are validated strictly: no type coercion and no silent removal of unknown fields,
 * so `"importance": "0.5"` and `"txet"` are both 400s naming the field. Query strings and
 * headers arrive as text, so they are coerced.
 */
const options = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false } as const;
export const bodyAjv = new Ajv.default({ ...options, coerceTypes: false });
const textAjv = new Ajv.default({ ...options, coerceTypes: 'array' });
for (const ajv of [bodyAjv, textAjv]) {
  ajv.addFormat('date-time', {
    type: 'string',
    validate: (s: string) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(s) && !Number.isNaN(Date.parse(s)),
  });
}

/**
 * Bodies are checked against the input rule by the JSON parser (http/input.ts); path parameters,
 * query strings and headers here, before their schema.
 */
export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  if (httpPart === 'body') return bodyAjv.compile(schema) as never;
  const validate = textAjv.compile(schema);
  const part = httpPart === 'params' || httpPart === 'querystring' ? httpPart : 'headers';
  const checked = (data: unknown) => {
    const error = checkTextInput(part, data, schema);
    if (error) return { error };
    const valid = validate(data);
    checked.errors = validate.errors;
    return valid;
  };
  checked.errors = null as ErrorObject[] | null | undefined;
  return checked as never;
};

/** The first error of a failed validation, as the 400 every route answers. */
export function validationError(errors: ErrorObject[] | null | undefined, context?: string): AppError {
  // An unknown field explains the other errors (a misspelt "txt" also leaves "text" missing), so name it first;
  // then a missing field, which is more precise than an object-level rule such as minProperties.
  const first = errors?.find((e) => e.keyword === 'additionalProperties') ?? errors?.find((e) => e.keyword === 'required') ?? errors?.[0];
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
