import { parse } from 'csv-parse/sync';
import { unreadable, utf8Text, type Parser } from './parser.js';

/** CSV through csv-parse (RFC 4180 quoting, any delimiter detected from , ; tab); one row per block, labelled by the header. */
export const csvParser: Parser = {
  type: 'csv',
  async parse(bytes) {
    const text = utf8Text(bytes);
    if (text === undefined) throw unreadable('The CSV file is not UTF-8 text');
    const firstLine = text.slice(0, text.indexOf('\n') >>> 0);
    const delimiter = [',', ';', '\t'].sort((a, b) => firstLine.split(b).length - firstLine.split(a).length)[0]!;
    let rows: string[][];
    try {
      rows = parse(text, { delimiter, relax_column_count: true, skip_empty_lines: true, trim: true }) as string[][];
    } catch (error) {
      throw unreadable(
        `The CSV file cannot be parsed (${error instanceof Error ? error.message.split('\n')[0] : 'malformed'})`,
      );
    }
    const [header, ...body] = rows;
    if (!header) return { blocks: [] };
    return {
      blocks: body
        .map((row) =>
          row
            .map((value, i) => (value === '' ? '' : header[i] ? `${header[i]}: ${value}` : value))
            .filter(Boolean)
            .join('; '),
        )
        .filter((text) => text.length > 0)
        .map((text) => ({ kind: 'row' as const, text })),
    };
  },
};
