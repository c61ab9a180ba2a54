import { createReadStream, createWriteStream, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';

/**
 * `engram export` and `engram import`: clients of a running server (its URL, a bearer token and a
 * project from flags or ENGRAM_URL / ENGRAM_TOKEN / ENGRAM_PROJECT_ID), with a progress bar on a
 * terminal and plain progress lines otherwise.
 */

export class CliError extends Error {}

interface Connection {
  url: string;
  token: string;
  project: string;
}

const common = {
  url: { type: 'string' },
  token: { type: 'string' },
  project: { type: 'string' },
  format: { type: 'string' },
} as const;

function connection(values: { url?: string; token?: string; project?: string }, env: NodeJS.ProcessEnv): Connection {
  const url = values.url ?? env.ENGRAM_URL ?? 'http://127.0.0.1:8080';
  const token = values.token ?? env.ENGRAM_TOKEN;
  const project = values.project ?? env.ENGRAM_PROJECT_ID;
  if (!token) throw new CliError('a bearer token is needed: --token or ENGRAM_TOKEN (from POST /auth/login)');
  if (!project) throw new CliError('a project is needed: --project or ENGRAM_PROJECT_ID');
  return { url: url.replace(/\/+$/, ''), token, project };
}

async function call(
  c: Connection,
  method: string,
  path: string,
  init: { body?: string | ReadableStream; headers?: Record<string, string> } = {},
) {
  const response = await fetch(`${c.url}${path}`, {
    method,
    body: init.body ?? null,
    headers: { authorization: `Bearer ${c.token}`, 'x-project-id': c.project, ...init.headers },
    ...(init.body instanceof ReadableStream ? { duplex: 'half' } : {}),
  } as RequestInit);
  if (!response.ok) {
    const error = (await response.json().catch(() => null)) as { error?: { message?: string; field?: string } } | null;
    throw new CliError(
      `${method} ${path}: ${response.status} ${error?.error?.message ?? response.statusText}${error?.error?.field ? ` (${error.error.field})` : ''}`,
    );
  }
  return response;
}

function progressPrinter(label: string) {
  const tty = process.stderr.isTTY;
  let lastLine = 0;
  return (done: number, total: number | null, unit: string, final = false) => {
    const now = Date.now();
    if (!final && !tty && now - lastLine < 2000) return;
    lastLine = now;
    const fraction = total ? Math.min(1, done / total) : 0;
    const counts = `${done}${total !== null ? `/${total}` : ''} ${unit}`;
    if (tty) {
      const width = 30;
      const bar = '#'.repeat(Math.round(fraction * width)).padEnd(width, '-');
      process.stderr.write(`\r${label} [${bar}] ${Math.round(fraction * 100)}% ${counts}${final ? '\n' : ''}`);
    } else {
      process.stderr.write(`${label}: ${total ? `${Math.round(fraction * 100)}% ` : ''}${counts}\n`);
    }
  };
}

const POLL_MS = 500;
const SOONEST_POLL_MS = 100;

/**
 * Polls a job's record until it finishes. The wait before the next poll is the time the rate so far
 * says is left (`fraction`: how much is done, when known), within SOONEST_POLL_MS and POLL_MS: a
 * fixed 500 ms saw a job's end 250 ms late on average, a twentieth of a 5 s import.
 */
async function poll<T extends { status: string }>(
  c: Connection,
  path: string,
  show: (record: T, final: boolean) => void,
  fraction: (record: T) => number | null,
  finished: string[],
): Promise<T> {
  const started = performance.now();
  for (;;) {
    const record = (await (await call(c, 'GET', path)).json()) as T;
    const done = finished.includes(record.status);
    show(record, done);
    if (done) return record;
    const part = fraction(record);
    const left = part ? ((performance.now() - started) * (1 - Math.min(1, part))) / part : POLL_MS;
    await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, Math.max(SOONEST_POLL_MS, left))));
  }
}

export async function exportCommand(argv: string[], env = process.env): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...common,
      gzip: { type: 'boolean' },
      'end-user': { type: 'string' },
      tenant: { type: 'string' },
      include: { type: 'string' },
      out: { type: 'string', short: 'o' },
    },
  });
  const c = connection(values, env);
  const scope = {
    ...(values['end-user'] ? { end_user_id: values['end-user'] } : {}),
    ...(values.tenant ? { tenant_id: values.tenant } : {}),
  };
  const body = {
    scope,
    ...(values.format ? { format: values.format } : {}),
    ...(values.gzip ? { gzip: true } : {}),
    ...(values.include ? { include: values.include.split(',') } : {}),
  };
  const created = (await (
    await call(c, 'POST', '/exports', { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } })
  ).json()) as { id: number };
  const show = progressPrinter(`export ${created.id}`);
  type ExportRecord = {
    status: string;
    error: string | null;
    filename: string;
    sha256: string;
    size: number;
    progress: { rows_done: number; rows_total: number | null };
  };
  const record = await poll<ExportRecord>(
    c,
    `/exports/${created.id}`,
    (r, final) => show(r.progress.rows_done, r.progress.rows_total, 'rows', final),
    (r) => (r.progress.rows_total ? r.progress.rows_done / r.progress.rows_total : null),
    ['completed', 'failed', 'cancelled', 'expired'],
  );
  if (record.status !== 'completed')
    throw new CliError(`export ${created.id} ${record.status}${record.error ? `: ${record.error}` : ''}`);
  const out = values.out ?? record.filename;
  const response = await call(c, 'GET', `/exports/${created.id}/download`);
  const hash = createHash('sha256');
  await pipeline(
    Readable.fromWeb(response.body as never),
    async function* (source) {
      for await (const chunk of source) {
        hash.update(chunk as Buffer);
        yield chunk;
      }
    },
    createWriteStream(out),
  );
  if (hash.digest('hex') !== record.sha256)
    throw new CliError(`${out}: the download does not match the export's SHA-256; run the command again`);
  process.stdout.write(
    `${out}: ${record.progress.rows_done} memories, ${record.size} bytes, sha256 ${record.sha256}\n`,
  );
}

export async function importCommand(argv: string[], env = process.env): Promise<void> {
  const { values, positionals } = parseArgs({ args: argv, options: common, allowPositionals: true });
  const file = positionals[0];
  if (!file) throw new CliError('usage: engram import FILE [--format auto|engram|mem0]');
  const c = connection(values, env);
  const size = statSync(file).size;
  const upload = progressPrinter('upload');
  let sent = 0;
  const stream = Readable.toWeb(
    Readable.from(
      (async function* () {
        for await (const chunk of createReadStream(file)) {
          sent += (chunk as Buffer).length;
          upload(sent, size, 'bytes', sent === size);
          yield chunk;
        }
      })(),
    ),
  ) as ReadableStream;
  const created = (await (
    await call(c, 'POST', `/imports${values.format ? `?format=${encodeURIComponent(values.format)}` : ''}`, {
      body: stream,
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(size) },
    })
  ).json()) as { id: number };
  const show = progressPrinter(`import ${created.id}`);
  type ImportRecord = {
    status: string;
    created: number;
    skipped: number;
    relations_created: number;
    relations_skipped: number;
    error: { message: string } | null;
    progress: { bytes_done: number; bytes_total: number; rows_done: number };
  };
  const record = await poll<ImportRecord>(
    c,
    `/imports/${created.id}`,
    (r, final) => show(r.progress.bytes_done, r.progress.bytes_total, `bytes, ${r.progress.rows_done} records`, final),
    (r) => (r.progress.bytes_total ? r.progress.bytes_done / r.progress.bytes_total : null),
    ['completed', 'failed', 'cancelled'],
  );
  if (record.status !== 'completed')
    throw new CliError(
      `import ${created.id} ${record.status}${record.error ? `: ${record.error.message}` : ''} (${record.created} created before it stopped; a re-run skips them)`,
    );
  const relations =
    record.relations_created + record.relations_skipped
      ? `; relations: ${record.relations_created} restored, ${record.relations_skipped} skipped`
      : '';
  process.stdout.write(
    `import ${created.id}: ${record.created} created, ${record.skipped} already present${relations}\n`,
  );
}
