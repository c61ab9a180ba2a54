import { closeSync, openSync, readFileSync, readSync } from 'node:fs';

/**
 * Test support for erasure (issue 47): every byte of this process's memory that the kernel has in place (all its
 * threads share one address space: the main thread, the search thread, native memory of SQLite, zlib, sockets and
 * Buffers alike), read through /proc/self/mem and searched for a marker in UTF-8 and UTF-16LE. What a heap snapshot
 * cannot see (the bytes of ArrayBuffers and native memory), and what it does not look at (freed memory).
 */

/** A marker kept as masked bytes: the process holds its plain bytes only while they are compared, a byte at a time. */
export interface MaskedMarker {
  /** The marker's length in bytes (ASCII: as many as characters). */
  readonly length: number;
  /** Its first four bytes, plain (a search starts there; four bytes are not the marker). */
  head(): Buffer;
  /** Its byte at `index`, unmasked into a number only. */
  byteAt(index: number): number;
}

/** Where a marker sits: the address, the mapping's permissions and file, the encoding, the bytes around it. */
export interface MemoryHit {
  address: bigint;
  region: string;
  encoding: 'utf8' | 'utf16le';
  around: string;
}

const PAGE = 4096;
const CHUNK = 4 << 20;

interface Region {
  start: bigint;
  end: bigint;
  perms: string;
  path: string;
}

/** The mappings that can hold data: readable, and not a file's read-only text (the binary, its libraries). */
function dataRegions(): Region[] {
  const regions: Region[] = [];
  for (const line of readFileSync('/proc/self/maps', 'utf8').trim().split('\n')) {
    const [range, perms, , , inode, ...rest] = line.split(/\s+/);
    const path = rest.join(' ');
    if (!range || !perms || perms[0] !== 'r' || path === '[vvar]' || path === '[vsyscall]') continue;
    if (inode !== '0' && perms[1] !== 'w') continue;
    const [start, end] = range.split('-').map((hex) => BigInt(`0x${hex}`)) as [bigint, bigint];
    regions.push({ start, end, perms, path: path || '[anon]' });
  }
  return regions;
}

/** The runs of a region's pages the kernel holds (in RAM or swapped out): pages never touched are not read. */
function presentRuns(pagemap: number, region: Region): Array<[bigint, bigint]> {
  const pages = Number((region.end - region.start) / BigInt(PAGE));
  const entries = Buffer.alloc(pages * 8);
  readSync(pagemap, entries, 0, entries.length, (region.start / BigInt(PAGE)) * 8n);
  const runs: Array<[bigint, bigint]> = [];
  let from = -1;
  for (let page = 0; page <= pages; page++) {
    const present = page < pages && (entries.readUInt32LE(page * 8 + 4) & 0xc0000000) !== 0;
    if (present && from < 0) from = page;
    else if (!present && from >= 0) {
      runs.push([region.start + BigInt(from * PAGE), region.start + BigInt(page * PAGE)]);
      from = -1;
    }
  }
  return runs;
}

function printable(bytes: Buffer): string {
  let text = '';
  for (const byte of bytes) text += byte >= 0x20 && byte < 0x7f ? String.fromCharCode(byte) : '.';
  return text;
}

/**
 * Every place in this process's memory holding `marker`, in UTF-8 and UTF-16LE, reachable or freed alike (the
 * kernel knows no difference): at most `limit` hits, each with 64 bytes either side (the marker shown as `<M>`).
 */
export function processMemoryHolding(marker: MaskedMarker, limit = 200): MemoryHit[] {
  const hits: MemoryHit[] = [];
  const heads = { utf8: marker.head(), utf16le: Buffer.alloc(8) };
  marker.head().forEach((byte, i) => heads.utf16le.writeUInt16LE(byte, i * 2));
  const widths = { utf8: 1, utf16le: 2 } as const;
  const chunk = Buffer.allocUnsafeSlow(CHUNK + 2 * marker.length);
  const mem = openSync('/proc/self/mem', 'r');
  const pagemap = openSync('/proc/self/pagemap', 'r');
  const matches = (at: number, width: 1 | 2, end: number) => {
    if (at + marker.length * width > end) return false;
    for (let i = 4; i < marker.length; i++) {
      if (chunk[at + i * width] !== marker.byteAt(i)) return false;
      if (width === 2 && chunk[at + i * width + 1] !== 0) return false;
    }
    return true;
  };
  try {
    for (const region of dataRegions()) {
      let runs: Array<[bigint, bigint]>;
      try {
        runs = presentRuns(pagemap, region);
      } catch {
        continue;
      }
      for (const [start, end] of runs)
        for (let at = start; at < end && hits.length < limit; at += BigInt(CHUNK)) {
          // Each chunk read with the marker's length of the next one, so a marker across the seam is seen once.
          const span = Number(
            end - at < BigInt(CHUNK + 2 * marker.length) ? end - at : BigInt(CHUNK + 2 * marker.length),
          );
          let read = 0;
          try {
            read = readSync(mem, chunk, 0, span, at);
          } catch {
            break;
          }
          const own = Math.min(read, CHUNK);
          for (const encoding of ['utf8', 'utf16le'] as const) {
            const width = widths[encoding];
            for (let found = chunk.indexOf(heads[encoding]); found >= 0 && found < own; ) {
              if (found < read && matches(found, width, read)) {
                const before = chunk.subarray(Math.max(0, found - 64), found);
                const after = chunk.subarray(
                  found + marker.length * width,
                  Math.min(read, found + marker.length * width + 64),
                );
                hits.push({
                  address: at + BigInt(found),
                  region: `${region.perms} ${region.path} +0x${(at + BigInt(found) - region.start).toString(16)}`,
                  encoding,
                  around: `${printable(before)}<M>${printable(after)}`,
                });
              }
              found = chunk.indexOf(heads[encoding], found + 1);
            }
          }
          // The buffer is itself in the memory read: it must not carry this chunk's bytes into a later read.
          chunk.fill(0);
        }
    }
  } finally {
    closeSync(mem);
    closeSync(pagemap);
  }
  return hits;
}
