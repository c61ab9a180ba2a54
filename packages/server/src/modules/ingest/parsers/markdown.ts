import { marked } from 'marked';
import { htmlBlocks } from './html.js';
import { unreadable, utf8Text, type Parser } from './parser.js';

/**
 * Markdown through `marked` (CommonMark and GFM, fast, no dependencies), whose HTML then follows
 * the HTML path, so headings, lists, code and tables split the same way in both formats.
 */
export const markdownParser: Parser = {
  type: 'markdown',
  async parse(bytes) {
    const text = utf8Text(bytes);
    if (text === undefined) throw unreadable('The Markdown file is not UTF-8 text');
    return htmlBlocks(await marked.parse(text, { gfm: true }), { readable: false });
  },
};
