import mammoth from 'mammoth';
import { htmlBlocks } from './html.js';
import { checkZipExpansion } from './limits.js';
import { unreadable, type Parser } from './parser.js';

/**
 * DOCX through mammoth, which maps Word's styles to semantic HTML (headings, lists, tables)
 * rather than reproducing the layout; that HTML then follows the HTML path. The zip's entries are
 * counted inflated before JSZip (in mammoth) inflates any.
 */
export const docxParser: Parser = {
  type: 'docx',
  async parse(bytes, limits) {
    await checkZipExpansion(bytes, limits);
    let html: string;
    try {
      html = (await mammoth.convertToHtml({ buffer: bytes })).value;
    } catch (error) {
      throw unreadable(`The DOCX file cannot be read (${error instanceof Error ? error.message : 'corrupt'})`);
    }
    return htmlBlocks(html, { readable: false });
  },
};
