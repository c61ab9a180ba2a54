import type { AddMemoryInput } from '../memories/index.js';
import type { ReadDocument } from './document.js';

/**
 * What a read document becomes in the process that serves requests: one memory a chunk, with its provenance.
 * Apart from document.ts, which runs in the reading processes: importing it would load every parser here.
 */

/** Where a memory came from, in its metadata: enough for retrieval to cite the file and the place in it. */
export interface Provenance {
  source: string;
  file: Record<string, unknown>;
}

export function chunkMemories(document: ReadDocument, provenance: Provenance): AddMemoryInput[] {
  return document.chunks.map((chunk) => ({
    text: chunk.text,
    source: provenance.source,
    metadata: {
      file: {
        ...provenance.file,
        type: document.type,
        sha256: document.sha256,
        ...(document.title ? { title: document.title } : {}),
      },
      heading_path: chunk.headingPath,
      ...(chunk.page !== null ? { page: chunk.page } : {}),
      chunk_index: chunk.index,
      chunk_count: document.chunks.length,
      char_start: chunk.charStart,
      char_end: chunk.charEnd,
    },
  }));
}
