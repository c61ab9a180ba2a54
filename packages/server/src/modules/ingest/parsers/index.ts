import { csvParser } from './csv.js';
import { docxParser } from './docx.js';
import { htmlParser } from './html.js';
import { jsonParser } from './json.js';
import { markdownParser } from './markdown.js';
import { unreadable, unsupported, utf8Text, type FileType, type Parser } from './parser.js';
import { pdfParser } from './pdf.js';
import { textParser } from './text.js';
import { lookupTable } from '../../../core/lookup.js';

export { FILE_TYPES, type Block, type FileType, type ParsedDocument, type Parser } from './parser.js';
export { tooLarge, type DocumentLimits } from './limits.js';

/** The factory: one parser per file type. */
const PARSERS: Record<FileType, Parser> = {
  text: textParser,
  markdown: markdownParser,
  html: htmlParser,
  pdf: pdfParser,
  docx: docxParser,
  csv: csvParser,
  json: jsonParser,
};

export const parserFor = (type: FileType): Parser => PARSERS[type];

const BY_EXTENSION: Record<string, FileType> = lookupTable({
  txt: 'text',
  text: 'text',
  log: 'text',
  md: 'markdown',
  markdown: 'markdown',
  mdown: 'markdown',
  html: 'html',
  htm: 'html',
  xhtml: 'html',
  pdf: 'pdf',
  docx: 'docx',
  csv: 'csv',
  tsv: 'csv',
  json: 'json',
});
const BY_MEDIA_TYPE: Record<string, FileType> = lookupTable({
  'text/plain': 'text',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'application/pdf': 'pdf',
  'text/csv': 'csv',
  'text/tab-separated-values': 'csv',
  'application/json': 'json',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
});

const startsWith = (bytes: Buffer, signature: number[]) => signature.every((b, i) => bytes[i] === b);
const PDF = [0x25, 0x50, 0x44, 0x46, 0x2d]; // %PDF-
const ZIP = [0x50, 0x4b, 0x03, 0x04];
/** OLE compound file: a legacy .doc, or an encrypted (password-protected) Office file. */
const OLE = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1];

/**
 * The type of a file, by its content first and its name (then declared media type) second:
 * binary signatures decide outright; for text, the extension picks among the text formats and,
 * without a known one, the content is sniffed (JSON, HTML, Markdown headings).
 */
export function detectType(bytes: Buffer, name: string, mediaType?: string): FileType {
  const extension = /\.([a-z0-9]+)$/i.exec(name)?.[1]?.toLowerCase() ?? '';
  const claimed =
    BY_EXTENSION[extension] ?? (mediaType ? BY_MEDIA_TYPE[mediaType.split(';')[0]!.trim().toLowerCase()] : undefined);
  if (startsWith(bytes, PDF)) return 'pdf';
  if (startsWith(bytes, ZIP)) {
    if (claimed === 'docx' || bytes.includes('word/document.xml')) return 'docx';
    throw unsupported('Only DOCX among zip-based files is supported');
  }
  if (startsWith(bytes, OLE)) {
    if (claimed === 'docx')
      throw unreadable('The DOCX file is encrypted (password-protected); upload an unprotected copy');
    throw unsupported('Legacy Office files (.doc, .xls) are not supported; save as DOCX');
  }
  if (claimed === 'pdf' || claimed === 'docx')
    throw unreadable(`The file is named as ${claimed.toUpperCase()} but its content is not`);
  const text = utf8Text(bytes.subarray(0, 64 * 1024));
  // A cut in the middle of a multi-byte character is not a reason to call the file binary.
  if (text === undefined && utf8Text(bytes) === undefined) {
    throw unsupported('Unsupported file type: text, Markdown, HTML, PDF, DOCX, CSV and JSON are accepted');
  }
  if (claimed) return claimed;
  const head = (text ?? '').trimStart().slice(0, 2048);
  if (/^[[{]/.test(head)) {
    try {
      JSON.parse(bytes.toString('utf8'));
      return 'json';
    } catch {
      // not JSON after all: plain text
    }
  }
  if (/^(<!doctype html|<html[\s>])/i.test(head)) return 'html';
  if (/^#{1,6} \S/m.test(head) || (/^\s*[-*] \S/m.test(head) && /\[[^\]]+\]\([^)]+\)/.test(head))) return 'markdown';
  return 'text';
}
