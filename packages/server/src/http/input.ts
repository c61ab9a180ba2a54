import type { FastifyInstance } from 'fastify';
import { type AppError, invalid, notFound } from '../core/errors.js';

/**
 * One input rule for every request, on both databases, applied before any schema or handler sees
 * the values: strings (and object keys) carry no NUL and no unpaired surrogate (PostgreSQL refuses
 * both, SQLite would store them), JSON nests at most `maxDepth` levels, and numbers stay within
 * the integers a double holds exactly. Each violation is a 400 naming the field.
 */
export const INPUT_LIMITS = { maxDepth: 32 } as const;

const NOT_TEXT = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/u;
const NOT_TEXT_ALL = new RegExp(NOT_TEXT.source, 'gu');
const badText = (s: string) => NOT_TEXT.test(s);
/** A field path safe to echo in an error body: the offending characters replaced. */
const printable = (s: string) => s.replace(NOT_TEXT_ALL, '\uFFFD');

/** The first violation of the input rule in a parsed JSON body, as the 400 to answer; undefined when it complies. */
export function checkJsonInput(root: unknown): AppError | undefined {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value: root, path: '', depth: 0 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!;
    const field = path || 'body';
    if (typeof value === 'string') {
      if (badText(value)) return invalid(field, `${field} must not contain NUL characters or unpaired surrogates`);
    } else if (typeof value === 'number') {
      if (Math.abs(value) > Number.MAX_SAFE_INTEGER)
        return invalid(field, `${field} must be between -(2^53-1) and 2^53-1`);
    } else if (value !== null && typeof value === 'object') {
      if (depth >= INPUT_LIMITS.maxDepth) {
        return invalid(field, `${field} is nested too deeply; JSON may nest at most ${INPUT_LIMITS.maxDepth} levels`);
      }
      const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
      for (const [key, child] of entries) {
        const childPath = path ? `${path}/${printable(key)}` : printable(key);
        if (badText(key))
          return invalid(
            childPath,
            `The field name ${childPath} must not contain NUL characters or unpaired surrogates`,
          );
        stack.push({ value: child, path: childPath, depth: depth + 1 });
      }
    }
  }
  return undefined;
}

/**
 * Makes `app`'s (and its children's) JSON parser Fastify's own (prototype poisoning refused) followed by
 * `check`, by default the input rule for the whole body.
 */
export function useJsonParser(
  app: FastifyInstance,
  check: (value: unknown) => AppError | undefined = checkJsonInput,
): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    try {
      parseJson(request, body as string, (error: Error | null, value?: unknown) => {
        if (error) return done(error, undefined);
        const violation = check(value);
        return violation ? done(violation, undefined) : done(null, value);
      });
    } catch (error) {
      // A document nested deeply enough to exhaust the parser's stack.
      if (error instanceof RangeError)
        return done(invalid('body', `JSON may nest at most ${INPUT_LIMITS.maxDepth} levels`), undefined);
      throw error;
    }
  });
}

/** Canonical decimal: no sign, no leading zeros, no spaces, no exponent. */
const CANONICAL_INTEGER = /^(0|[1-9][0-9]{0,15})$/;

/**
 * The input rule for path parameters and query strings, given the schema they are validated with:
 * text without NUL, and integers written in canonical decimal within 2^53-1. A path id that is not
 * is 404 (no such resource: `/keys/01` is not key 1); a query value is a 400 naming it.
 */
export function checkTextInput(
  part: 'params' | 'querystring' | 'headers',
  data: unknown,
  schema: unknown,
): AppError | undefined {
  if (!data || typeof data !== 'object') return undefined;
  const properties = (schema as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties ?? {};
  for (const [name, raw] of Object.entries(data as Record<string, unknown>)) {
    for (const value of Array.isArray(raw) ? raw : [raw]) {
      if (typeof value !== 'string') continue;
      if (badText(value)) {
        if (part === 'params' && properties[name]?.type === 'integer') return notFound();
        return invalid(printable(name), `${printable(name)} must not contain NUL characters or unpaired surrogates`);
      }
      if (properties[name]?.type !== 'integer') continue;
      if (!CANONICAL_INTEGER.test(value) || Number(value) > Number.MAX_SAFE_INTEGER) {
        if (part === 'params') return notFound();
        return invalid(name, `${name} must be a whole number written in decimal, at most ${Number.MAX_SAFE_INTEGER}`);
      }
    }
  }
  return undefined;
}
