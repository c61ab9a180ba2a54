import { AppError } from '../../../core/errors.js';
import { getDocumentProxy } from 'unpdf';
import { checkPdfExpansion, tooLarge } from './limits.js';
import { paragraphs, unreadable, type Block, type Parser } from './parser.js';

/**
 * PDF through unpdf: Mozilla's PDF.js packaged for server runtimes (no worker or canvas set-up).
 * PDF.js is the most widely used PDF reader in JavaScript and reports encryption distinctly.
 * A PDF carries no reliable heading structure, so its location is the page. Its Flate streams are
 * counted before PDF.js decodes them, and its page count read before any page is.
 */
type PdfDocument = Awaited<ReturnType<typeof getDocumentProxy>>;

/**
 * Pages read at once: unpdf's extractText reads every page at once, which held all of a 5,000-page
 * PDF in memory; a few at a time keeps PDF.js's round trips overlapping.
 */
const PAGES_AT_ONCE = 16;

/** One page's text (as unpdf's extractText joins it), the page's resources freed after. */
async function pageText(document: PdfDocument, n: number): Promise<string> {
  const page = await document.getPage(n);
  const content = await page.getTextContent();
  page.cleanup();
  return content.items.map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : '')).join('');
}

export const pdfParser: Parser = {
  type: 'pdf',
  async parse(bytes, limits) {
    await checkPdfExpansion(bytes, limits);
    let pages: string[];
    try {
      const document = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 } as never);
      if (document.numPages > limits.maxPages) {
        await document.destroy();
        throw tooLarge('ENGRAM_PARSE_MAX_PAGES', `The PDF has more than ${limits.maxPages} pages`);
      }
      pages = [];
      for (let first = 1; first <= document.numPages; first += PAGES_AT_ONCE) {
        const last = Math.min(document.numPages, first + PAGES_AT_ONCE - 1);
        pages.push(
          ...(await Promise.all(Array.from({ length: last - first + 1 }, (_, i) => pageText(document, first + i)))),
        );
      }
      await document.destroy();
    } catch (error) {
      if (error instanceof AppError) throw error;
      const name = error instanceof Error ? error.name : '';
      if (name === 'PasswordException')
        throw unreadable('The PDF is encrypted (password-protected); upload an unprotected copy');
      throw unreadable('The PDF is corrupt and cannot be read');
    }
    const blocks: Block[] = [];
    // A line break and the blanks around it from the start of their run only (from each blank of a long run, the pattern
    // read it again: quadratic).
    const lines = /(?<!\s)\s*\n\s*/g;
    pages.forEach((text, i) => {
      for (const p of paragraphs(text)) blocks.push({ kind: 'text', text: p.replace(lines, ' '), page: i + 1 });
    });
    return { blocks };
  },
};
