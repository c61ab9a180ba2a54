import { unreadable, utf8Text, type Block, type Parser } from './parser.js';

/**
 * JSON with the built-in parser. Objects become sections named by their keys; scalar members are
 * `key: value` lines packed together; each element of an array of objects is one record.
 */
function walk(value: unknown, key: string | undefined, level: number, out: Block[]): void {
  if (Array.isArray(value)) {
    if (key !== undefined) out.push({ kind: 'heading', text: key, level });
    for (const item of value) {
      if (item !== null && typeof item === 'object') {
        const lines = flat(item);
        if (lines) out.push({ kind: 'row', text: lines });
      } else if (item !== null && item !== '') out.push({ kind: 'text', text: String(item) });
    }
    return;
  }
  if (value !== null && typeof value === 'object') {
    if (key !== undefined) out.push({ kind: 'heading', text: key, level });
    const scalars: string[] = [];
    for (const [k, v] of Object.entries(value)) {
      if (v !== null && typeof v === 'object') continue;
      if (v !== null && v !== '') scalars.push(`${k}: ${String(v)}`);
    }
    if (scalars.length) out.push({ kind: 'text', text: scalars.join('\n') });
    for (const [k, v] of Object.entries(value)) {
      if (v !== null && typeof v === 'object') walk(v, k, Math.min(level + 1, 6), out);
    }
    return;
  }
  if (value !== null && value !== '')
    out.push({ kind: 'text', text: key === undefined ? String(value) : `${key}: ${String(value)}` });
}

/** A record on one line per member, nested values as compact JSON. */
const flat = (record: object) =>
  Object.entries(record)
    .filter(([, v]) => v !== null && v !== '')
    .map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
    .join('\n');

export const jsonParser: Parser = {
  type: 'json',
  async parse(bytes) {
    const text = utf8Text(bytes);
    if (text === undefined) throw unreadable('The JSON file is not UTF-8 text');
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw unreadable(`The JSON file is malformed (${error instanceof Error ? error.message : 'syntax error'})`);
    }
    const blocks: Block[] = [];
    walk(value, undefined, 1, blocks);
    return { blocks };
  },
};
