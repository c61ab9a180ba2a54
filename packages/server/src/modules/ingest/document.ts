import { sha256Hex } from '../../core/crypto.js';
import { invalid } from '../../core/errors.js';
import { chunkBlocks, type Chunk } from './chunker.js';
import { detectType, parserFor, tooLarge, type DocumentLimits, type FileType } from './parsers/index.js';

/**
 * The pipeline every document goes through, from an upload or a connector: detect the type,
 * parse, split along the structure, and describe each chunk as a memory with its provenance.
 */

export interface ReadDocument {
  type: FileType;
  sha256: string;
  size: number;
  title?: string;
  chunks: Chunk[];
}

/**
 * Throws 415 for an unsupported type, 400 for a corrupt, encrypted or empty file and 413 for one
 * beyond `limits`. Runs in a reading process (reader.ts), never in the process that serves requests.
 */
export async function readDocumentHere(
  bytes: Buffer,
  name: string,
  mediaType: string | undefined,
  limits: DocumentLimits,
): Promise<ReadDocument> {
  const type = detectType(bytes, name, mediaType);
  const parsed = await parserFor(type).parse(bytes, limits);
  // Paragraphs and headings are bounded; table rows and records are not (a CSV of a million rows is a
  // legitimate import): their number is bounded by the file's bytes (ENGRAM_UPLOAD_MAX_BYTES) and the
  // reader's heap (ENGRAM_PARSE_MAX_HEAP_MB).
  const parts = parsed.blocks.reduce((n, block) => (block.kind === 'row' ? n : n + 1), 0);
  if (parts > limits.maxParts)
    throw tooLarge(
      'ENGRAM_PARSE_MAX_PARTS',
      `The file has more than ${limits.maxParts} parts (paragraphs or headings)`,
    );
  const chunks = chunkBlocks(parsed.blocks);
  if (chunks.length === 0) throw invalid('file', 'The file has no text to remember (a scanned PDF needs OCR first)');
  return {
    type,
    sha256: sha256Hex(bytes),
    size: bytes.length,
    ...(parsed.title ? { title: parsed.title } : {}),
    chunks,
  };
}
