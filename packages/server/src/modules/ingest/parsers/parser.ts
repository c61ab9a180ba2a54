import { AppError, invalid } from '../../../core/errors.js';
import type { DocumentLimits } from './limits.js';

/**
 * One interface for every file type: a parser turns a file's bytes into the document's blocks in
 * reading order (headings, paragraphs, table rows), which the chunker then packs into memories.
 */

export const FILE_TYPES = ['text', 'markdown', 'html', 'pdf', 'docx', 'csv', 'json'] as const;
export type FileType = (typeof FILE_TYPES)[number];

export interface Block {
  /** heading: opens a section (`level` 1-6); text: prose that may be packed with its neighbours; row: a table row or record, kept whole. */
  kind: 'heading' | 'text' | 'row';
  text: string;
  level?: number;
  /** 1-based page (PDF). */
  page?: number;
}

export interface ParsedDocument {
  title?: string;
  blocks: Block[];
}

export interface Parser {
  readonly type: FileType;
  /** Throws 413 (limits.ts#tooLarge) for a file beyond `limits`. */
  parse(bytes: Buffer, limits: DocumentLimits): Promise<ParsedDocument>;
}

/** The file is corrupt, encrypted or not what its type says: the caller's problem, reported as 400. */
export const unreadable = (reason: string) => invalid('file', reason);

export const unsupported = (message: string) => new AppError('unsupported_media_type', message, 'file');

/** Text of a file, or undefined when its bytes are not UTF-8 text (a NUL byte or an invalid sequence). */
export function utf8Text(bytes: Buffer): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes).replace(/^\uFEFF/, '');
  } catch {
    return undefined;
  }
}

/** Paragraphs of plain text: runs of lines separated by blank lines, inner whitespace kept readable. */
export function paragraphs(text: string): string[] {
  // Blanks before a line break from the start of their run only (from each blank of a long run, the pattern read it
  // again: quadratic).
  const blanks = /(?<![ \t])[ \t]+\n/g;
  return text
    .replace(/\r\n?/g, '\n')
    .split(/\n[ \t]*\n+/)
    .map((p) => p.replace(blanks, '\n').trim())
    .filter((p) => p.length > 0);
}
