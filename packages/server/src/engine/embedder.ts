// Built-in embedder: feature hashing of stemmed words and character n-grams.
// Deterministic, offline, no model download. It captures sub-word overlap
// (compounds, typos, inflections the stemmer misses, unsegmented scripts), not meaning.
import { analyze, foldCase, isStopWord } from './text.js';

export interface Embedder {
  /** Stored beside vectors so vectors from different embedders are never compared. */
  readonly id: string;
  readonly dimensions: number;
  embed(texts: string[]): Promise<Float32Array[]>;
}

export interface BuiltinEmbedder extends Embedder {
  embedSync(text: string): Float32Array;
}

/** 32-bit FNV-1a; stable across runs and platforms, which stored vectors rely on. */
export function fnv1a(s: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function addFeature(v: Float32Array, feature: string, weight: number): void {
  const h = fnv1a(feature);
  // One hash bit picks the sign so colliding features cancel on average instead of piling up.
  const idx = (h >>> 1) % v.length;
  v[idx]! += h & 1 ? weight : -weight;
}

export function l2normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  if (s > 0) {
    const inv = 1 / Math.sqrt(s);
    for (let i = 0; i < v.length; i++) v[i]! *= inv;
  }
  return v;
}

export function dot(a: Float32Array, b: Float32Array, bOffset = 0): number {
  let s = 0;
  const n = a.length;
  for (let i = 0; i < n; i++) s += a[i]! * b[bOffset + i]!;
  return s;
}

class HashingEmbedder implements BuiltinEmbedder {
  readonly id: string;
  constructor(readonly dimensions: number) {
    this.id = `builtin-v1-${dimensions}`;
  }

  embedSync(text: string): Float32Array {
    const v = new Float32Array(this.dimensions);
    for (const term of analyze(text)) addFeature(v, `w:${term}`, 1);
    // Character 3/4-grams of each content word, padded so prefixes/suffixes are distinct.
    // Scaled by 1/count so a long word weighs about as much as one whole-word feature.
    const words = foldCase(text).match(/[\p{L}\p{N}]+/gu) ?? [];
    for (const w of words) {
      if (isStopWord(w)) continue;
      const chars = Array.from(`<${w}>`);
      if (chars.length < 5) continue; // short words are fully covered by the word feature
      const grams: string[] = [];
      for (let n = 3; n <= 4; n++)
        for (let i = 0; i + n <= chars.length; i++) grams.push(chars.slice(i, i + n).join(''));
      const wgt = 1 / Math.sqrt(grams.length);
      for (const g of grams) addFeature(v, `c:${g}`, wgt);
    }
    return l2normalize(v);
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map((t) => this.embedSync(t));
  }
}

export function builtinEmbedder(dimensions = 256): BuiltinEmbedder {
  return new HashingEmbedder(dimensions);
}
