import type { operations } from './generated/openapi.js';
import { OPERATIONS } from './generated/operations.js';

/** Every operation of the served OpenAPI document, by its operationId. */
export type OperationId = keyof typeof OPERATIONS & keyof operations;

type JsonOf<T> = T extends { content: { 'application/json': infer B } } ? B : never;
type SuccessStatus = 200 | 201 | 202 | 206 | 207;
/** The JSON body an operation takes. */
export type Body<K extends OperationId> = operations[K] extends { requestBody?: infer R }
  ? JsonOf<NonNullable<R>>
  : never;
/** The query parameters an operation takes. */
export type Query<K extends OperationId> = operations[K]['parameters'] extends { query?: infer Q }
  ? NonNullable<Q>
  : never;
/** What an operation answers on success (any of its 2xx bodies). */
export type Result<K extends OperationId> = {
  [S in keyof operations[K]['responses']]: S extends SuccessStatus ? JsonOf<operations[K]['responses'][S]> : never;
}[keyof operations[K]['responses']];
/** One item of a paginated list. */
export type Item<K extends OperationId> = Result<K> extends { items: Array<infer I> } ? I : never;

/**
 * An error answer of the server (its Error body), or a request that got no answer (status 0). The
 * common statuses have their own subclasses (NotFoundError, RateLimitError...), so a caller can
 * `catch (e) { if (e instanceof NotFoundError) ... }`; every one is still an EngramError.
 */
export class EngramError extends Error {
  override readonly name: string = 'EngramError';
  constructor(
    /** HTTP status; 0 when no answer arrived (network error, timeout). */
    readonly status: number,
    /** The server's machine-readable code (validation_error, not_found, rate_limited...), or network_error / timeout. */
    readonly code: string,
    message: string,
    /** The offending field, on validation errors. */
    readonly field: string | undefined,
    /** The server's request id: quote it when reporting a problem. */
    readonly request_id: string | undefined,
    /** Seconds the server asked to wait (Retry-After), on 429 and 503. */
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

/** 400: the request is invalid; `field` names the offending field. */
export class ValidationError extends EngramError {
  override readonly name: string = 'ValidationError';
}
/** 401: missing, invalid or expired credentials. */
export class AuthenticationError extends EngramError {
  override readonly name: string = 'AuthenticationError';
}
/** 403: the credential lacks the scope, role or project access. */
export class PermissionError extends EngramError {
  override readonly name: string = 'PermissionError';
}
/** 404: absent, or outside the caller's scope. */
export class NotFoundError extends EngramError {
  override readonly name: string = 'NotFoundError';
}
/** 409: conflicts with the current state (or the same Idempotency-Key is in flight). */
export class ConflictError extends EngramError {
  override readonly name: string = 'ConflictError';
}
/** 429: rate limited or a quota used up; `retryAfter` says how long to wait. */
export class RateLimitError extends EngramError {
  override readonly name: string = 'RateLimitError';
}

const ERROR_CLASSES: Record<number, typeof EngramError> = {
  400: ValidationError,
  401: AuthenticationError,
  403: PermissionError,
  404: NotFoundError,
  409: ConflictError,
  429: RateLimitError,
};

/** The EngramError (subclass) for an answer's status. */
export function errorFor(
  status: number,
  code: string,
  message: string,
  field: string | undefined,
  requestId: string | undefined,
  retryAfter?: number,
): EngramError {
  return new (ERROR_CLASSES[status] ?? EngramError)(status, code, message, field, requestId, retryAfter);
}

/** Per-call settings; scoping headers override the client's defaults for this call only. */
export interface CallOptions {
  signal?: AbortSignal;
  /** Milliseconds for the whole call, retries and their waits included; default the client's timeoutMs. */
  timeoutMs?: number;
  /** Sent as Idempotency-Key; by default the client makes one for every write it may retry (reads sent as POST take none). */
  idempotencyKey?: string;
  projectId?: string;
  endUserId?: string;
  tenantId?: string;
  organizationId?: string;
  headers?: Record<string, string>;
}

export interface TransportOptions {
  /** Where the server answers, e.g. http://localhost:8080. */
  baseUrl: string;
  /**
   * Milliseconds a call may take in all, retries and their waits included (default 30 000): an attempt
   * gets what is left, and a retry whose wait (Retry-After included) would end past it is not made.
   */
  timeoutMs?: number;
  /**
   * Retries after the first attempt on 429, 503, 409 idempotency_in_progress and network errors, within timeoutMs
   * (default 3; 0 turns retrying off).
   */
  maxRetries?: number;
  /** The first backoff in milliseconds, doubled per retry, with jitter (default 250). */
  retryBaseMs?: number;
  /** The longest wait between attempts, Retry-After included (default 30 000). */
  maxRetryDelayMs?: number;
  /** A fetch implementation (default globalThis.fetch). */
  fetch?: typeof fetch;
  /** Called before every attempt; for logging and metrics. */
  onRequest?: (request: { operationId: string; method: string; url: string; attempt: number }) => void;
}

/** What a request carries besides its operation: path parameters, query, and a JSON or raw body. */
export interface Input {
  path?: Record<string, string | number>;
  query?: object;
  body?: unknown;
  /** A body sent as is (a file, a form), instead of JSON. */
  raw?: { body: RequestBody; contentType?: string };
  headers?: Record<string, string>;
}

/** What fetch accepts as a request body (without depending on the DOM library's types). */
export type RequestBody = NonNullable<RequestInit['body']>;

const RETRIED_STATUSES = new Set([429, 503]);
/** 429, 503, and a 409 saying the same Idempotency-Key is still running: its answer is stored soon, or its claim taken over. */
const retried = (failure: EngramError) =>
  RETRIED_STATUSES.has(failure.status) || failure.code === 'idempotency_in_progress';

/** Credentials and scoping of a plane: the headers of every request, and what to do after a 401. */
export interface Credentials {
  headers(): Promise<Record<string, string>>;
  /** Called once after a 401; true when the credentials were renewed and the request may be sent again. */
  renew?(): Promise<boolean>;
}

/** Requests for one plane: URL building, headers, timeouts, retries and error mapping. */
export class Transport {
  private readonly fetch: typeof fetch;
  readonly baseUrl: string;

  constructor(
    readonly options: TransportOptions,
    private readonly credentials: Credentials,
  ) {
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
  }

  /** Sends an operation and parses its JSON answer. */
  async call<K extends OperationId>(operationId: K, input: Input = {}, options: CallOptions = {}): Promise<Result<K>> {
    const text = await this.exchange(operationId, input, options, (response) => response.text());
    return (text === '' ? undefined : JSON.parse(text)) as Result<K>;
  }

  /** Sends an operation and hands back the answer unread (downloads): the timeout covers the wait for its headers. */
  send(operationId: OperationId, input: Input = {}, options: CallOptions = {}): Promise<Response> {
    return this.exchange(operationId, input, options, null);
  }

  /** One request with its retries; `read` consumes a successful answer within the call's deadline. */
  private exchange(operationId: OperationId, input: Input, options: CallOptions, read: null): Promise<Response>;
  private exchange<T>(
    operationId: OperationId,
    input: Input,
    options: CallOptions,
    read: (response: Response) => Promise<T>,
  ): Promise<T>;
  private async exchange<T>(
    operationId: OperationId,
    input: Input,
    options: CallOptions,
    read: ((response: Response) => Promise<T>) | null,
  ): Promise<T | Response> {
    const operation: { method: string; path: string; idempotent?: true } = OPERATIONS[operationId];
    const { method, path } = operation;
    const url = this.urlOf(path, input);
    const headers: Record<string, string> = { accept: 'application/json' };
    for (const [name, value] of Object.entries({
      'x-project-id': options.projectId,
      'x-end-user-id': options.endUserId,
      'x-tenant-id': options.tenantId,
      'x-organization-id': options.organizationId,
    }))
      if (value !== undefined) headers[name] = value;
    let body: RequestBody | undefined;
    if (input.raw) {
      body = input.raw.body;
      if (input.raw.contentType) headers['content-type'] = input.raw.contentType;
    } else if (input.body !== undefined) {
      body = JSON.stringify(input.body);
      headers['content-type'] = 'application/json';
    }
    const maxRetries = this.options.maxRetries ?? 3;
    // A stream can be sent once only; anything else may be sent again.
    const replayable = !(body instanceof ReadableStream);
    // A write the server records an Idempotency-Key for; a read sent as POST is retried without one.
    const write = operation.idempotent === true;
    const idempotencyKey =
      options.idempotencyKey ?? (write && maxRetries > 0 && replayable ? newIdempotencyKey() : undefined);
    if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
    const retriable = replayable && (!write || idempotencyKey !== undefined);
    let renewed = false;
    const deadline = Date.now() + (options.timeoutMs ?? this.options.timeoutMs ?? 30_000);
    const timedOut = () => new EngramError(0, 'timeout', `${method} ${path} timed out`, undefined, undefined);
    for (let attempt = 0; ; attempt++) {
      this.options.onRequest?.({ operationId, method, url, attempt });
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(), Math.max(0, deadline - Date.now()));
      let response: Response;
      try {
        const credentialHeaders = await this.credentials.headers();
        response = await this.fetch(url, {
          method,
          body,
          signal: options.signal ? AbortSignal.any([timeout.signal, options.signal]) : timeout.signal,
          headers: { ...credentialHeaders, ...headers, ...input.headers, ...options.headers },
          ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
        } as RequestInit);
        if (response.ok) {
          if (!read) return response;
          return await read(response);
        }
      } catch (error) {
        if (options.signal?.aborted) throw options.signal.reason ?? error;
        if (timeout.signal.aborted) throw timedOut();
        const failure = new EngramError(
          0,
          'network_error',
          `${method} ${path}: ${(error as Error).message}`,
          undefined,
          undefined,
        );
        const wait = this.backoff(attempt);
        if (!retriable || attempt >= maxRetries || Date.now() + wait >= deadline) throw failure;
        await this.pause(wait, options.signal);
        continue;
      } finally {
        clearTimeout(timer);
      }
      const failure = await errorOf(response);
      if (response.status === 401 && !renewed && this.credentials.renew) {
        renewed = true;
        if (await this.credentials.renew()) {
          attempt--;
          continue;
        }
      }
      if (!retriable || !retried(failure) || attempt >= maxRetries) throw failure;
      const wait = Math.min(
        failure.retryAfter !== undefined ? failure.retryAfter * 1000 : this.backoff(attempt),
        this.options.maxRetryDelayMs ?? 30_000,
      );
      // A wait that ends past the deadline could only end in a timeout: the answer we have is the better error.
      if (Date.now() + wait >= deadline) throw failure;
      await this.pause(wait, options.signal);
    }
  }

  /** Every item of a paginated list, page after page (offset and limit), while has_next. */
  async *pages<K extends OperationId>(
    operationId: K,
    input: Input = {},
    options: CallOptions = {},
  ): AsyncGenerator<Item<K>> {
    const query = { ...(input.query as Record<string, unknown> | undefined) };
    let offset = typeof query.offset === 'number' ? query.offset : 0;
    for (;;) {
      const page = (await this.call(operationId, { ...input, query: { ...query, offset } }, options)) as {
        items: Item<K>[];
        has_next: boolean;
      };
      yield* page.items;
      if (!page.has_next || page.items.length === 0) return;
      offset += page.items.length;
    }
  }

  /** Every item of a cursor-paginated list (GET /memory), page after page, following next_cursor while has_next. */
  async *cursorPages<K extends OperationId>(
    operationId: K,
    input: Input = {},
    options: CallOptions = {},
  ): AsyncGenerator<Item<K>> {
    const query = { ...(input.query as Record<string, unknown> | undefined) };
    for (;;) {
      const page = (await this.call(operationId, { ...input, query }, options)) as {
        items: Item<K>[];
        has_next: boolean;
        next_cursor: string | null;
      };
      yield* page.items;
      if (!page.has_next || page.next_cursor === null) return;
      query.cursor = page.next_cursor;
    }
  }

  /**
   * The bytes of a download, chunk by chunk. A connection lost mid-way is resumed with a Range
   * request from the byte reached, as long as the artifact (its ETag) is the same.
   */
  async *download(operationId: OperationId, input: Input = {}, options: CallOptions = {}): AsyncGenerator<Uint8Array> {
    let received = 0;
    let etag: string | null = null;
    const maxRetries = this.options.maxRetries ?? 3;
    for (let resumed = 0; ; resumed++) {
      const range = received > 0 ? { range: `bytes=${received}-`, ...(etag ? { 'if-range': etag } : {}) } : {};
      const response = await this.send(operationId, { ...input, headers: { ...input.headers, ...range } }, options);
      if (received > 0 && response.status !== 206)
        throw new EngramError(
          0,
          'network_error',
          'The download was interrupted and the artifact changed since',
          undefined,
          response.headers.get('x-request-id') ?? undefined,
        );
      etag ??= response.headers.get('etag');
      try {
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          received += chunk.length;
          yield chunk;
        }
        return;
      } catch (error) {
        if (options.signal?.aborted || resumed >= maxRetries) throw error;
      }
    }
  }

  private urlOf(path: string, input: Input): string {
    const filled = path.replace(/\{([^}]+)\}/g, (_, name: string) => {
      const value = input.path?.[name];
      if (value === undefined) throw new TypeError(`Path parameter ${name} is required`);
      return encodeURIComponent(String(value));
    });
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(input.query ?? {})) {
      if (value === undefined || value === null) continue;
      for (const one of Array.isArray(value) ? value : [value]) search.append(name, String(one));
    }
    const query = search.toString();
    return `${this.baseUrl}${filled}${query ? `?${query}` : ''}`;
  }

  /** Exponential backoff with full jitter: a random wait between half and all of base * 2^attempt. */
  private backoff(attempt: number): number {
    const ceiling = Math.min(this.options.maxRetryDelayMs ?? 30_000, (this.options.retryBaseMs ?? 250) * 2 ** attempt);
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }

  private pause(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function newIdempotencyKey(): string {
  return `engram-client-${globalThis.crypto.randomUUID()}`;
}

async function errorOf(response: Response): Promise<EngramError> {
  const retryAfterHeader = response.headers.get('retry-after');
  let retryAfter: number | undefined;
  if (retryAfterHeader !== null) {
    const seconds = Number(retryAfterHeader);
    retryAfter = Number.isFinite(seconds)
      ? Math.max(0, seconds)
      : Math.max(0, (Date.parse(retryAfterHeader) - Date.now()) / 1000) || 0;
  }
  const requestId = response.headers.get('x-request-id') ?? undefined;
  const text = await response.text().catch(() => '');
  try {
    const { error } = JSON.parse(text) as {
      error: { code: string; message: string; field?: string; request_id?: string };
    };
    return errorFor(response.status, error.code, error.message, error.field, error.request_id ?? requestId, retryAfter);
  } catch {
    return errorFor(
      response.status,
      `http_${response.status}`,
      text.slice(0, 200) || response.statusText,
      undefined,
      requestId,
      retryAfter,
    );
  }
}
