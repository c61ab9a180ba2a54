import type { Block } from './parsers/index.js';

/**
 * Splits a document into memories along its structure. Paragraphs of one section (same heading
 * path, same page) are packed up to CHUNK.target characters; a paragraph up to CHUNK.max stays whole;
 * a longer one is split at sentence ends (at word boundaries when a sentence alone is too long).
 * Table rows and records are one chunk each. So every chunk has 1 to CHUNK.max characters, and only a
 * short section (or a row) gives one under CHUNK.target.
 */
export const CHUNK = { target: 800, max: 1500 } as const;

export interface Chunk {
  text: string;
  /** Headings enclosing the chunk, outermost first. */
  headingPath: string[];
  page: number | null;
  index: number;
  /** Offsets into the document's extracted text (its blocks joined by blank lines). */
  charStart: number;
  charEnd: number;
}

const SEPARATOR = '\n\n';

/** Pieces of at most `max` characters: sentence ends first, then word boundaries, then a hard cut. */
function pieces(text: string, max: number): Array<{ text: string; offset: number }> {
  if (text.length <= max) return [{ text, offset: 0 }];
  const sentences = text.match(/[^.!?。！？]+(?:[.!?。！？]+["')\]]*\s*|$)/gu) ?? [text];
  const out: Array<{ text: string; offset: number }> = [];
  let current = '';
  let start = 0;
  let position = 0;
  const push = () => {
    const trimmed = current.trimEnd();
    if (trimmed.trim())
      out.push({ text: trimmed.trimStart(), offset: start + (trimmed.length - trimmed.trimStart().length) });
    current = '';
  };
  for (const sentence of sentences) {
    if (current.length + sentence.length > max && current) push();
    if (!current) start = position;
    if (sentence.length > max) {
      for (let i = 0; i < sentence.length; ) {
        let end = Math.min(sentence.length, i + max);
        const space = sentence.lastIndexOf(' ', end);
        if (end < sentence.length && space > i) end = space;
        current = sentence.slice(i, end);
        start = position + i;
        push();
        i = end;
        while (sentence[i] === ' ') i++;
      }
    } else {
      current += sentence;
    }
    position += sentence.length;
  }
  push();
  return out;
}

export function chunkBlocks(blocks: Block[], limits: { target: number; max: number } = CHUNK): Chunk[] {
  const chunks: Chunk[] = [];
  const headings: Array<{ level: number; text: string }> = [];
  let offset = 0;
  let open: { parts: string[]; start: number; end: number; page: number | null; path: string[] } | undefined;
  const flush = () => {
    if (open)
      chunks.push({
        text: open.parts.join(SEPARATOR),
        headingPath: open.path,
        page: open.page,
        index: chunks.length,
        charStart: open.start,
        charEnd: open.end,
      });
    open = undefined;
  };
  const path = () => headings.map((h) => h.text);

  for (const block of blocks) {
    const blockStart = offset;
    offset += block.text.length + SEPARATOR.length;
    const page = block.page ?? null;
    if (block.kind === 'heading') {
      flush();
      const level = block.level ?? 1;
      while (headings.length && headings[headings.length - 1]!.level >= level) headings.pop();
      headings.push({ level, text: block.text.slice(0, 200) });
      continue;
    }
    if (open && (open.page !== page || block.kind === 'row')) flush();
    for (const piece of pieces(block.text, limits.max)) {
      const start = blockStart + piece.offset;
      const end = start + piece.text.length;
      if (open && open.parts.join(SEPARATOR).length + SEPARATOR.length + piece.text.length > limits.target) flush();
      if (!open) open = { parts: [], start, end, page, path: path() };
      open.parts.push(piece.text);
      open.end = end;
    }
    if (block.kind === 'row') flush();
  }
  flush();
  return chunks;
}

/** The text the offsets of chunkBlocks refer to. */
export const extractedText = (blocks: Block[]) => blocks.map((b) => b.text).join(SEPARATOR);
