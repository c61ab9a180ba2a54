import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import { AppError } from '../../../core/errors.js';
import { unreadable, utf8Text, type Block, type ParsedDocument, type Parser } from './parser.js';

/**
 * HTML through linkedom (a small, fast DOM) and, for whole web pages, Mozilla Readability (the
 * Firefox Reader View extractor) to keep the article and drop navigation, ads and footers.
 */

const SKIPPED = new Set([
  'script',
  'style',
  'noscript',
  'template',
  'svg',
  'iframe',
  'nav',
  'footer',
  'header',
  'aside',
  'form',
  'button',
]);
const BLOCKS = new Set(['p', 'li', 'blockquote', 'pre', 'dd', 'dt', 'figcaption', 'caption', 'address']);
const HEADING = /^h([1-6])$/;

const clean = (text: string) => text.replace(/[ \t\r\n\u00a0]+/g, ' ').trim();

type Node = {
  nodeType: number;
  nodeName: string;
  textContent: string | null;
  childNodes: ArrayLike<Node>;
  children?: ArrayLike<Node>;
};

function rowText(row: Node, header: string[] | undefined): string {
  const cells = Array.from(row.childNodes)
    .filter((c) => /^(TD|TH)$/i.test(c.nodeName))
    .map((c) => clean(c.textContent ?? ''));
  if (header && header.length === cells.length)
    return cells.map((c, i) => (header[i] ? `${header[i]}: ${c}` : c)).join('; ');
  return cells.join(' | ');
}

function tableBlocks(table: Node, out: Block[]): void {
  const rows: Node[] = [];
  const collect = (n: Node) => {
    for (const c of Array.from(n.childNodes)) {
      if (/^TR$/i.test(c.nodeName)) rows.push(c);
      else if (/^(THEAD|TBODY|TFOOT)$/i.test(c.nodeName)) collect(c);
    }
  };
  collect(table);
  let header: string[] | undefined;
  rows.forEach((row, i) => {
    const cells = Array.from(row.childNodes).filter((c) => /^(TD|TH)$/i.test(c.nodeName));
    if (i === 0 && cells.length > 0 && cells.every((c) => /^TH$/i.test(c.nodeName))) {
      header = cells.map((c) => clean(c.textContent ?? ''));
      return;
    }
    const text = rowText(row, header);
    if (text.replace(/[|;\s]/g, '')) out.push({ kind: 'row', text });
  });
}

/** Walks the DOM in reading order: headings open sections, block elements become paragraphs, tables rows. */
function walk(node: Node, out: Block[]): void {
  let inline = '';
  const flush = () => {
    const text = clean(inline);
    if (text) out.push({ kind: 'text', text });
    inline = '';
  };
  for (const child of Array.from(node.childNodes)) {
    if (child.nodeType === 3) {
      inline += child.textContent ?? '';
      continue;
    }
    if (child.nodeType !== 1) continue;
    const name = child.nodeName.toLowerCase();
    if (SKIPPED.has(name)) continue;
    const heading = HEADING.exec(name);
    if (heading) {
      flush();
      const text = clean(child.textContent ?? '');
      if (text) out.push({ kind: 'heading', text, level: Number(heading[1]) });
    } else if (name === 'table') {
      flush();
      tableBlocks(child, out);
    } else if (BLOCKS.has(name)) {
      flush();
      // A list item or quote may hold nested lists: its own text first, then the nested blocks.
      const nested: Block[] = [];
      walk(child, nested);
      out.push(...nested);
    } else if (name === 'br') {
      inline += '\n';
    } else if (
      /^(span|a|em|strong|b|i|u|code|small|sub|sup|mark|abbr|time|q|s|del|ins|kbd|var|cite|label)$/.test(name)
    ) {
      inline += child.textContent ?? '';
    } else {
      flush();
      walk(child, out);
    }
  }
  flush();
}

/** Elements that never hold others, so never open a level. */
const VOID = new Set([
  'area',
  'base',
  'br',
  'col',
  'embed',
  'hr',
  'img',
  'input',
  'link',
  'meta',
  'param',
  'source',
  'track',
  'wbr',
]);
/** Deeper than any page people write; the DOM and Readability slow down past linearly with depth (200,000 levels: minutes). */
export const MAX_NESTING = 1_000;

/** Refuses markup nested deeper than MAX_NESTING, counted from its tags before a DOM is built. */
function checkNesting(html: string): void {
  let depth = 0;
  // Up to the last ">" only: there every tag the pattern starts ends, where past it each "<a" read to the end of the
  // file, and back through its name (quadratic).
  const tags = html.slice(0, html.lastIndexOf('>') + 1);
  for (const tag of tags.matchAll(/<(\/?)([a-zA-Z][\w:-]*)[^>]*?(\/?)>/g)) {
    if (tag[1]) depth = Math.max(0, depth - 1);
    else if (!tag[3] && !VOID.has(tag[2]!.toLowerCase()) && ++depth > MAX_NESTING) {
      throw new AppError('payload_too_large', `The file nests elements more than ${MAX_NESTING} levels deep`, 'file');
    }
  }
}

/** Blocks of an HTML document; `readable` first extracts the main content of a web page. */
export function htmlBlocks(html: string, options: { readable: boolean; url?: string }): ParsedDocument {
  checkNesting(html);
  const { document } = parseHTML(
    html.includes('<html') ? html : `<!doctype html><html><head></head><body>${html}</body></html>`,
  );
  const title = clean(document.querySelector('title')?.textContent ?? '') || undefined;
  let root: Node = (document.body ?? document.documentElement) as unknown as Node;
  if (options.readable) {
    // Readability changes the document it reads, so it gets its own copy.
    const article = new Readability(
      parseHTML(html).document as unknown as ConstructorParameters<typeof Readability>[0],
      { charThreshold: 100 },
    ).parse();
    if (article?.content)
      root = parseHTML(`<!doctype html><html><body>${article.content}</body></html>`).document.body as unknown as Node;
  }
  const blocks: Block[] = [];
  if (root) walk(root, blocks);
  return { ...(title ? { title } : {}), blocks };
}

export const htmlParser: Parser = {
  type: 'html',
  async parse(bytes) {
    const html = utf8Text(bytes);
    if (html === undefined) throw unreadable('The HTML file is not UTF-8 text');
    return htmlBlocks(html, { readable: true });
  },
};
