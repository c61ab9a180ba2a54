import { extractText, getDocumentProxy } from 'unpdf';
import { paragraphs, unreadable, type Block, type Parser } from './parser.js';

/**
 * PDF through unpdf: Mozilla's PDF.js packaged for server runtimes (no worker or canvas set-up).
 * PDF.js is the most widely used PDF reader in JavaScript and reports encryption distinctly.
 * A PDF carries no reliable heading structure, so its location is the page.
 */
export const pdfParser: Parser = {
  type: 'pdf',
  async parse(bytes) {
    let pages: string[];
    try {
      const document = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 } as never);
      pages = (await extractText(document, { mergePages: false })).text;
      await document.destroy();
    } catch (error) {
      const name = error instanceof Error ? error.name : '';
      if (name === 'PasswordException') throw unreadable('The PDF is encrypted (password-protected); upload an unprotected copy');
      throw unreadable('The PDF is corrupt and cannot be read');
    }
    const blocks: Block[] = [];
    pages.forEach((text, i) => {
      for (const p of paragraphs(text)) blocks.push({ kind: 'text', text: p.replace(/\s*\n\s*/g, ' '), page: i + 1 });
    });
    return { blocks };
  },
};
