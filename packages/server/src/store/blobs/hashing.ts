import { createHash } from 'node:crypto';

/**
 * Cuts a byte stream into pieces of exactly `size` bytes (the last may be shorter, and an empty
 * stream yields no piece), hashing everything that passes: both stores write fixed-size pieces.
 */
export async function* fixedPieces(
  body: AsyncIterable<Uint8Array>,
  size: number,
  hash: ReturnType<typeof createHash>,
): AsyncGenerator<Buffer> {
  let parts: Buffer[] = [];
  let held = 0;
  for await (const chunk of body) {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    hash.update(bytes);
    parts.push(bytes);
    held += bytes.length;
    while (held >= size) {
      const all = parts.length === 1 ? parts[0]! : Buffer.concat(parts, held);
      yield Buffer.from(all.subarray(0, size));
      const rest = all.subarray(size);
      parts = rest.length ? [rest] : [];
      held = rest.length;
    }
  }
  if (held > 0) yield Buffer.concat(parts, held);
}

export const sha256 = () => createHash('sha256');
