import { AppError } from '../../../core/errors.js';
import { extractText, getDocumentProxy } from 'unpdf';
import { checkPdfExpansion, tooLarge } from './limits.js';
import { paragraphs, unreadable, type Block, type Parser } from './parser.js';

/**
 * PDF through unpdf: Mozilla's PDF.js packaged for server runtimes (no worker or canvas set-up).
 * PDF.js is the most widely used PDF reader in JavaScript and reports encryption distinctly.
 * A PDF carries no reliable heading structure, so its location is the page. Its Flate streams are
 * counted before PDF.js decodes them, and its page count read before any page is.
 */
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
      pages = (await extractText(document, { mergePages: false })).text;
      await document.destroy();
    } catch (error) {
      if (error instanceof AppError) throw error;
      const name = error instanceof Error ? error.name : '';
      if (name === 'PasswordException')
        throw unreadable('The PDF is encrypted (password-protected); upload an unprotected copy');
      throw unreadable('The PDF is corrupt and cannot be read');
    }
    const blocks: Block[] = [];
    pages.forEach((text, i) => {
      for (const p of paragraphs(text)) blocks.push({ kind: 'text', text: p.replace(/\s*\n\s*/g, ' '), page: i + 1 });
    });
    return { blocks };
  },
};
