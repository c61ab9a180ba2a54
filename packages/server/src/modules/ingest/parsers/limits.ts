import { PassThrough, Readable } from 'node:stream';
import { createInflate, createInflateRaw } from 'node:zlib';
import type { Config } from '../../../config.js';
import { AppError } from '../../../core/errors.js';

/**
 * The bounds a file is read within (ENGRAM_PARSE_*), checked before a parser library sees the file:
 * PDF.js and JSZip inflate into typed arrays, which live outside the JavaScript heap and so outside
 * the reading process's heap limit; only a count made first keeps a bomb from filling memory.
 */
export type DocumentLimits = Pick<Config['parse'], 'maxExpandedBytes' | 'maxPages' | 'maxParts'>;

/** A bound broken: 413 naming the setting that bounds it, so an operator knows what to raise. */
export const tooLarge = (setting: string, what: string) =>
  new AppError('payload_too_large', `${what} (${setting})`, 'file');

const expandedTooFar = (limits: DocumentLimits) =>
  tooLarge(
    'ENGRAM_PARSE_MAX_EXPANDED_BYTES',
    `The file expands to more than ${limits.maxExpandedBytes} bytes when decompressed`,
  );

/**
 * Inflates `input`, counting what comes out against `budget.left` and dropping it. zlib data nested
 * in the output (a PDF stream with two Flate filters, decoded one after the other) is inflated and
 * counted too, two levels deep. Ends when the data does, at an error (not deflate data: what came
 * before counts), or once the budget is spent.
 */
function drain(input: Readable, raw: boolean, budget: { left: number }, depth = 0): Promise<void> {
  return new Promise((resolve) => {
    const inflate = raw ? createInflateRaw({ chunkSize: 64 * 1024 }) : createInflate({ chunkSize: 64 * 1024 });
    let nested: { sink: PassThrough; done: Promise<void> } | undefined;
    let first = true;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      input.unpipe(inflate);
      inflate.destroy();
      nested?.sink.end();
      void (nested?.done ?? Promise.resolve()).then(() => resolve());
    };
    inflate.on('data', (chunk: Buffer) => {
      if (first && depth < 2 && zlibHeader(chunk[0], chunk[1])) {
        const sink = new PassThrough();
        nested = { sink, done: drain(sink, false, budget, depth + 1).then(() => void sink.destroy()) };
        // The nested data spent the budget: nothing more to count here.
        void nested.done.then(() => budget.left < 0 && end());
      }
      first = false;
      budget.left -= chunk.length;
      if (budget.left < 0) return end();
      if (nested && !nested.sink.destroyed && !nested.sink.write(chunk)) {
        inflate.pause();
        nested.sink.once('drain', () => inflate.resume()).once('close', () => inflate.resume());
      }
    });
    inflate.once('end', end).once('error', end).once('close', end);
    input.once('error', end);
    input.pipe(inflate);
  });
}

async function inflatedBytes(data: Uint8Array, raw: boolean, budget: { left: number }): Promise<void> {
  await drain(Readable.from([data]), raw, budget);
}

const PDF_STREAM = Buffer.from('stream');
/** A zlib header: deflate (method 8), window up to 32 KiB, header checksum right. */
const zlibHeader = (b0: number | undefined, b1: number | undefined) =>
  b0 !== undefined && b1 !== undefined && (b0 & 0x0f) === 8 && b0 >> 4 <= 7 && ((b0 << 8) | b1) % 31 === 0;

/**
 * Every stream of a PDF that holds zlib data, inflated and counted: by content, not by its /Filter
 * (which may be an indirect object), so that no Flate stream PDF.js could decode escapes the count.
 */
export async function checkPdfExpansion(bytes: Buffer, limits: DocumentLimits): Promise<void> {
  const budget = { left: limits.maxExpandedBytes };
  for (let at = bytes.indexOf(PDF_STREAM); at !== -1; at = bytes.indexOf(PDF_STREAM, at + PDF_STREAM.length)) {
    if (bytes.toString('latin1', Math.max(0, at - 3), at) === 'end') continue;
    let start = at + PDF_STREAM.length;
    if (bytes[start] === 0x0d) start++;
    if (bytes[start] !== 0x0a) continue;
    start++;
    if (!zlibHeader(bytes[start], bytes[start + 1])) continue;
    const end = bytes.indexOf('endstream', start);
    await inflatedBytes(bytes.subarray(start, end === -1 ? bytes.length : end), false, budget);
    if (budget.left < 0) throw expandedTooFar(limits);
  }
}

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

/**
 * Every entry of a zip (a DOCX) inflated and counted, by its central directory as JSZip reads it,
 * entries that share their data (a "non-recursive" bomb) each counted again.
 */
export async function checkZipExpansion(bytes: Buffer, limits: DocumentLimits): Promise<void> {
  let eocd = -1;
  for (let i = bytes.length - 22; i >= Math.max(0, bytes.length - 22 - 0xffff); i--) {
    if (bytes.readUInt32LE(i) === EOCD) {
      eocd = i;
      break;
    }
  }
  // Not a zip JSZip can open either: the parser reports it as unreadable.
  if (eocd === -1) return;
  const entries = bytes.readUInt16LE(eocd + 10);
  if (entries > limits.maxParts)
    throw tooLarge('ENGRAM_PARSE_MAX_PARTS', `The file holds more than ${limits.maxParts} parts`);
  const budget = { left: limits.maxExpandedBytes };
  let at = bytes.readUInt32LE(eocd + 16);
  for (let n = 0; n < entries && at + 46 <= bytes.length && bytes.readUInt32LE(at) === CENTRAL; n++) {
    const method = bytes.readUInt16LE(at + 10);
    const compressed = bytes.readUInt32LE(at + 20);
    const local = bytes.readUInt32LE(at + 42);
    at += 46 + bytes.readUInt16LE(at + 28) + bytes.readUInt16LE(at + 30) + bytes.readUInt16LE(at + 32);
    if (local + 30 > bytes.length || bytes.readUInt32LE(local) !== LOCAL) continue;
    const start = local + 30 + bytes.readUInt16LE(local + 26) + bytes.readUInt16LE(local + 28);
    const data = bytes.subarray(start, Math.min(bytes.length, start + compressed));
    if (method === 8) await inflatedBytes(data, true, budget);
    else budget.left -= data.length;
    if (budget.left < 0) throw expandedTooFar(limits);
  }
}
