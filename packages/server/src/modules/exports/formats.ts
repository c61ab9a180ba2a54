import type { PortableMemory } from '../memories/index.js';
import type { PortableRelation } from '../synthesis/index.js';

/** How an export artifact is written: Engram's own format, readable back by POST /imports. */

export const ENGRAM_EXPORT_FORMAT = 'engram.export';

/** One exported memory: the memory, whose it is, and what was asked to be included. */
export type ExportRecord = PortableMemory & {
  history?: unknown[];
  feedback?: unknown[];
  relations?: PortableRelation[];
};

export interface ArtifactHeader {
  format: typeof ENGRAM_EXPORT_FORMAT;
  version: 1;
  export_id: number;
  project_id: string;
  generated_at: string;
  scope: Record<string, unknown>;
  include: string[];
}

const CSV_COLUMNS = [
  'id',
  'tenant_id',
  'end_user_id',
  'text',
  'tags',
  'is_summary',
  'source',
  'importance',
  'metadata',
  'client_ref',
  'session_id',
  'speaker',
  'created_at',
  'updated_at',
] as const;

function csvField(value: unknown): string {
  const text = value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export interface Serializer {
  start(header: ArtifactHeader): string;
  record(record: ExportRecord, first: boolean): string;
  end(): string;
}

/** jsonl: a header line, then one memory per line. json: one document. csv: one row per memory, JSON in the structured columns. */
export function serializer(format: 'jsonl' | 'json' | 'csv', include: string[]): Serializer {
  if (format === 'jsonl') {
    return { start: (h) => `${JSON.stringify(h)}\n`, record: (r) => `${JSON.stringify(r)}\n`, end: () => '' };
  }
  if (format === 'json') {
    return {
      start: (h) => `${JSON.stringify(h).slice(0, -1)},"memories":[`,
      record: (r, first) => (first ? '' : ',') + JSON.stringify(r),
      end: () => ']}\n',
    };
  }
  const columns = [...CSV_COLUMNS, ...include];
  return {
    start: () => `${columns.join(',')}\r\n`,
    record: (r) => `${columns.map((c) => csvField((r as Record<string, unknown>)[c])).join(',')}\r\n`,
    end: () => '',
  };
}

export const CONTENT_TYPES = {
  jsonl: 'application/x-ndjson',
  json: 'application/json',
  csv: 'text/csv; charset=utf-8',
} as const;
