/**
 * Reads the records of an import file as a stream, one at a time, whatever its size: a JSON
 * array of records (Mem0's get_all), a JSON object holding them under `results` (Mem0's export)
 * or `memories` (Engram's json), or JSON lines after a header line (Engram's jsonl).
 */

export type Container = 'array' | 'results' | 'memories' | 'lines';

export type Scanned =
  | { kind: 'record'; container: Container; text: string; record: number; line: number }
  | { kind: 'header'; value: Record<string, unknown> };

export class ImportFileError extends Error {
  constructor(
    message: string,
    readonly record: number | null,
    readonly line: number | null,
  ) {
    super(message);
  }
}

const RECORD_KEYS = new Set(['results', 'memories']);
const [NEWLINE, QUOTE, BACKSLASH, OPEN_BRACE, CLOSE_BRACE, OPEN_BRACKET, CLOSE_BRACKET] = [...'\n"\\{}[]'].map((c) =>
  c.charCodeAt(0),
);
const MAX_HEADER_CHARS = 1024 * 1024;

export async function* scanRecords(chunks: AsyncIterable<string>): AsyncGenerator<Scanned> {
  let depth = 0;
  let line = 1;
  let inString = false;
  let escaped = false;
  let tops = 0;
  let record = 0;
  // Inside the array whose elements are records, and at which depth its elements start.
  let recordDepth: number | null = null;
  let container: Container = 'array';
  let current: string | null = null;
  let currentLine = 0;
  // The first top-level object with its record array left out: the header.
  let skeleton = '';
  let keyText: string | null = null;
  let lastKey = '';
  let expectKey = false;

  const fail = (message: string): never => {
    throw new ImportFileError(`line ${line}: ${message}`, null, line);
  };

  for await (const chunk of chunks) {
    for (let i = 0; i < chunk.length; i++) {
      if (current !== null) {
        // Inside a record: scanned by char code and taken as one slice, not appended a character at a time.
        const start = i;
        for (; i < chunk.length; i++) {
          const code = chunk.charCodeAt(i);
          if (code === NEWLINE) line++;
          if (inString) {
            if (escaped) escaped = false;
            else if (code === BACKSLASH) escaped = true;
            else if (code === QUOTE) inString = false;
          } else if (code === QUOTE) inString = true;
          else if (code === OPEN_BRACE || code === OPEN_BRACKET) depth++;
          else if ((code === CLOSE_BRACE || code === CLOSE_BRACKET) && --depth === recordDepth) break;
        }
        current += chunk.slice(start, i + 1);
        if (i < chunk.length) {
          yield { kind: 'record', container, text: current, record, line: currentLine };
          current = null;
        }
        continue;
      }
      const c = chunk[i]!;
      if (c === '\n') line++;
      if (inString) {
        skeleton += c;
        if (escaped) escaped = false;
        else if (c === '\\') escaped = true;
        else if (c === '"') inString = false;
        if (keyText !== null) {
          if (inString) keyText += c;
          else {
            lastKey = JSON.parse(`"${keyText}"`) as string;
            keyText = null;
          }
        }
        continue;
      }
      if (c === ' ' || c === '\n' || c === '\r' || c === '\t') continue;
      if (recordDepth !== null && depth === recordDepth) {
        if (c === ',' && container !== 'lines') continue;
        if (c === ']' && container !== 'lines') {
          recordDepth = null;
          depth--;
          if (depth > 0) skeleton += ']';
          continue;
        }
        if (c !== '{') fail(`record ${record + 1} is not a JSON object`);
        record++;
        current = '{';
        currentLine = line;
        depth++;
        continue;
      }
      if (depth === 0) {
        if (c !== '{' && c !== '[') fail('expected a JSON object or array');
        tops++;
        depth = 1;
        if (tops > 1) fail('unexpected data after the end of the document');
        if (c === '[') {
          container = 'array';
          recordDepth = 1;
        } else {
          skeleton = '{';
          expectKey = true;
        }
        continue;
      }
      // Inside the header object, outside any record array.
      if (skeleton.length > MAX_HEADER_CHARS)
        fail('the document has no records array (results or memories) near its start');
      skeleton += c;
      if (c === '"') {
        inString = true;
        if (depth === 1 && expectKey) keyText = '';
      } else if (c === ':' && depth === 1) expectKey = false;
      else if (c === ',' && depth === 1) expectKey = true;
      else if (c === '{') depth++;
      else if (c === '[') {
        depth++;
        if (depth === 2 && RECORD_KEYS.has(lastKey) && tops === 1) {
          container = lastKey as Container;
          recordDepth = 2;
        }
      } else if (c === '}' || c === ']') {
        depth--;
        if (depth === 0) {
          const header = JSON.parse(skeleton) as Record<string, unknown>;
          yield { kind: 'header', value: header };
          if (container === 'array' && record === 0) {
            // A header line without a records array: JSON lines follow, one record each.
            container = 'lines';
            recordDepth = 0;
          }
        }
      }
    }
  }
  if (inString || depth !== 0) fail('the file ends inside a JSON value');
}
