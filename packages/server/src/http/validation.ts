import type { FastifySchemaCompiler } from 'fastify';
import { bodyAjv, textAjv } from '../core/validation.js';

/** Bodies strictly, query strings and headers coerced (see core/validation.ts). */
export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? bodyAjv : textAjv).compile(schema) as never;
