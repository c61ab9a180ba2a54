import { Worker, type WorkerOptions } from 'node:worker_threads';
import { CredentialsMoved } from './credentials-clock.js';
import { AppError, type ErrorCode } from './errors.js';

/**
 * What every worker thread of Engram's shares (the search thread, the document readers): starting a
 * worker from its module, compiled or TypeScript, and errors crossing back to the caller's thread.
 */

/** The module beside `base` named `name` (no extension): compiled JavaScript, or TypeScript under tsx (`npm run dev`, tests without a build). */
export const siblingModule = (name: string, base: string): URL =>
  new URL(`./${name}${base.endsWith('.ts') ? '.ts' : '.js'}`, base);

/** A worker running `module`; a TypeScript module is loaded through tsx, which the worker registers first. */
export function moduleWorker(module: URL, options: WorkerOptions): Worker {
  return module.pathname.endsWith('.ts')
    ? new Worker(
        `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(module.href)}); })`,
        { ...options, eval: true },
      )
    : new Worker(module, options);
}

/** An error thrown on a thread, as it crosses back (structured clone keeps no classes). */
export type ThreadError =
  | { kind: 'app'; code: ErrorCode; message: string; field?: string; headers: Record<string, string> }
  | { kind: 'credentials_moved' }
  | { kind: 'failed'; name: string; message: string; stack?: string; code?: string };

export function threadError(error: unknown): ThreadError {
  if (error instanceof AppError)
    return {
      kind: 'app',
      code: error.code,
      message: error.message,
      ...(error.field !== undefined ? { field: error.field } : {}),
      headers: error.headers,
    };
  if (error instanceof CredentialsMoved) return { kind: 'credentials_moved' };
  const e = error instanceof Error ? error : new Error(String(error));
  const code = (e as { code?: unknown }).code;
  return {
    kind: 'failed',
    name: e.name,
    message: e.message,
    ...(e.stack ? { stack: e.stack } : {}),
    ...(typeof code === 'string' ? { code } : {}),
  };
}

/** The error a thread reported, rebuilt on this side; `where` names the thread in the stack. */
export function rethrown(error: ThreadError, where: string): Error {
  if (error.kind === 'app') return new AppError(error.code, error.message, error.field, error.headers);
  if (error.kind === 'credentials_moved') return new CredentialsMoved();
  const e = Object.assign(new Error(error.message), error.code !== undefined ? { code: error.code } : {});
  e.name = error.name;
  if (error.stack) e.stack = `${error.stack}\n    (on ${where})`;
  return e;
}
