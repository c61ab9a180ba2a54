import { paragraphs, unreadable, utf8Text, type Parser } from './parser.js';

/** Plain text: paragraphs separated by blank lines. */
export const textParser: Parser = {
  type: 'text',
  async parse(bytes) {
    const text = utf8Text(bytes);
    if (text === undefined) throw unreadable('The file is not UTF-8 text');
    return { blocks: paragraphs(text).map((p) => ({ kind: 'text' as const, text: p })) };
  },
};
