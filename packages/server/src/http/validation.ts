import type { ErrorObject } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';
import { bodyAjv, textAjv } from '../core/validation.js';
import { checkTextInput } from './input.js';

/**
 * Bodies strictly, query strings and headers coerced (see core/validation.ts). Bodies are checked
 * against the input rule by the JSON parser (http/input.ts); path parameters, query strings and
 * headers here, before their schema.
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
