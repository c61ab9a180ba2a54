import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import type { ErrorObject } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';
import { bodyAjv, textAjv } from '../core/validation.js';
import { checkTextInput } from './input.js';

/**
 * Request validators and response serializers are compiled at their route's first use, not at start: compiling
 * every route's schemas took about a third of a process's start (~0.8 s), and most processes (a worker, a
 * process a balancer has just started) answer few routes soon. A schema the compiler refuses still fails every
 * request of its route, and the fuzz test sends every operation.
 */
type Compiled = ((data: unknown) => unknown) & { errors?: ErrorObject[] | null };

function compiledOnFirstUse(compile: () => Compiled): Compiled {
  let compiled: Compiled | undefined;
  const firstUse: Compiled = (data) => {
    compiled ??= compile();
    const result = compiled(data);
    // Fastify reads a validator's errors from the function it was given.
    firstUse.errors = compiled.errors;
    return result;
  };
  firstUse.errors = null;
  return firstUse;
}

/** Fastify's response serializers (fast-json-stringify), each compiled at its first response. */
export const serializersOnFirstUse: SerializerSelector.SerializerFactory = (schemas, options) => {
  const compile = SerializerSelector()(schemas, options);
  return (route) => compiledOnFirstUse(() => compile(route)) as SerializerSelector.Serializer;
};

/**
 * Bodies strictly, query strings and headers coerced (see core/validation.ts). Bodies are checked
 * against the input rule by the JSON parser (http/input.ts); path parameters, query strings and
 * headers here, before their schema.
 */
export const validatorCompiler: FastifySchemaCompiler<object> = (route) =>
  compiledOnFirstUse(() => compileValidator(route) as Compiled) as never;

const compileValidator: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
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
