// The int8 x int16 dot product as a WebAssembly SIMD module, assembled here byte by byte (issue 53):
// no toolchain, no binary in the repository. A doc's int8 codes (vectors.ts) times a query
// quantised to int16 (14 bits: the error is < 7e-4 of a cosine), eight dimensions an instruction
// pair (`i16x8.load8x8_s` widens eight codes, `i32x4.dot_i16x8_s` multiplies and adds pairs):
// 0.13 us a 512-dimension dot (codes in cache) against 2.4 us in JavaScript, same process
// (engine/README.md, "The semantic path", session 8).
// The module imports its memory (vector-arena.ts: one per thread, shared by the thread's indexes).
//
// exports:
//   dot(q, c, n) -> i32     the sum over i < n of q[i] (int16 at byte q + 2i) times c[i] (int8 at byte c + i)
//   dots(q, base, stride, slots, count, out)
//                           for j < count: out[j] (int32 at out + 4j) = dot(q, base + slots[j] * stride, stride),
//                           slots[j] an int32 at slots + 4j: a batch in one call (a call from JavaScript into
//                           WebAssembly costs about what a cached 512-dimension dot does)
//   signSums(q, base, bytes, slots, count, out)
//                           for j < count: out[j] = the sum of q[i] over the bits i set in the `bytes` sign bytes
//                           at base + slots[j] * bytes (bit b of byte t: i = 8t + b); sixteen dimensions (two
//                           bytes) a turn: each byte into eight int8 lanes, AND (1, 2, 4, ... 128), = that: all
//                           ones where set; widened to int16, `i32x4.dot_i16x8_s` with q's parts sums minus them.
//                           Reads a byte past an odd count (q must be 0 past its dimensions, as bits are).

/** Unsigned LEB128. */
function u32(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

/** Signed LEB128 of a small constant. */
function s32(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && !(b & 0x40)) || (n === -1 && b & 0x40)) return [...out, b];
    out.push(b | 0x80);
  }
}

const vec = (items: number[][]): number[] => [...u32(items.length), ...items.flat()];
const section = (id: number, body: number[]): number[] => [id, ...u32(body.length), ...body];
const name = (s: string): number[] => vec([...s].map((c) => [c.charCodeAt(0)]));

const I32 = 0x7f;
const V128 = 0x7b;
// Instructions (core, then the 0xfd-prefixed SIMD ones), each spelled as its bytes.
const block = [0x02, 0x40]; // block with no result
const loop = [0x03, 0x40];
const end = [0x0b];
const br = (depth: number) => [0x0c, ...u32(depth)];
const brIf = (depth: number) => [0x0d, ...u32(depth)];
const call = (fn: number) => [0x10, ...u32(fn)];
const get = (local: number) => [0x20, ...u32(local)];
const set = (local: number) => [0x21, ...u32(local)];
const i32Const = (n: number) => [0x41, ...s32(n)];
/** memarg: alignment exponent, then offset. */
const mem = (align: number, offset = 0) => [...u32(align), ...u32(offset)];
const i32Load = [0x28, ...mem(2)];
const i32Load8S = [0x2c, ...mem(0)];
const i32Load16S = [0x2e, ...mem(1)];
const i32Store = [0x36, ...mem(2)];
const i32GtU = [0x4b];
const i32GeU = [0x4f];
const i32Add = [0x6a];
const i32Sub = [0x6b];
const i32Mul = [0x6c];
const i32Shl = [0x74];
const simd = (op: number) => [0xfd, ...u32(op)];
const v128Load = (offset = 0) => [...simd(0x00), ...mem(0, offset)]; // 16 bytes, unaligned
const i16x8Load8x8S = (offset = 0) => [...simd(0x01), ...mem(0, offset)]; // 8 int8 -> 8 int16
/** v128.const of sixteen int8 lanes. */
const i8x16Const = (lanes: number[]) => [...simd(0x0c), ...lanes.map((x) => x & 0xff)];
const v128Load16Splat = [...simd(0x08), ...mem(0)]; // two bytes into every 16-bit lane
const i8x16Swizzle = simd(0x0e);
const i8x16Eq = simd(0x23);
const v128And = simd(0x4e);
const i16x8ExtendLowI8x16S = simd(0x87);
const i16x8ExtendHighI8x16S = simd(0x88);
const tee = (local: number) => [0x22, ...u32(local)];
const i32x4ExtractLane = (lane: number) => [...simd(0x1b), lane];
const i32x4Add = simd(0xae);
const i32x4DotI16x8S = simd(0xba); // 4 lanes, each the sum of two int16 products

/** dot(q, c, n), its locals and code: params 0-2; locals 3: i, 4: acc0, 5: acc1 (v128, zero at entry), 6: sum. */
function dotBody(): number[] {
  const [q, c, n, i, acc0, acc1, sum] = [0, 1, 2, 3, 4, 5, 6];
  const qAt = [...get(q), ...get(i), ...i32Const(1), ...i32Shl, ...i32Add]; // q + 2i
  const cAt = [...get(c), ...get(i), ...i32Add]; // c + i
  // acc += dot(q[i + 8 * half ..], c[i + 8 * half ..])
  const step = (acc: number, half: number) => [
    ...get(acc),
    ...qAt,
    ...v128Load(16 * half),
    ...cAt,
    ...i16x8Load8x8S(8 * half),
    ...i32x4DotI16x8S,
    ...i32x4Add,
    ...set(acc),
  ];
  const advance = (by: number) => [...get(i), ...i32Const(by), ...i32Add, ...set(i)];
  // while (i + width <= n) { body; i += width }
  const whileFits = (width: number, body: number[]) => [
    ...block,
    ...loop,
    ...get(i),
    ...i32Const(width),
    ...i32Add,
    ...get(n),
    ...i32GtU,
    ...brIf(1),
    ...body,
    ...advance(width),
    ...br(0),
    ...end,
    ...end,
  ];
  const lanes = (acc: number) => [0, 1, 2, 3].flatMap((l) => [...get(acc), ...i32x4ExtractLane(l), ...i32Add]);
  const code = [
    // Sixteen dimensions a turn on two sums (the second's multiply need not wait for the first's add), then eight.
    ...whileFits(16, [...step(acc0, 0), ...step(acc1, 1)]),
    ...whileFits(8, step(acc0, 0)),
    ...i32Const(0),
    ...lanes(acc0),
    ...lanes(acc1),
    ...set(sum),
    // The last n % 8 dimensions one by one.
    ...block,
    ...loop,
    ...get(i),
    ...get(n),
    ...i32GeU,
    ...brIf(1),
    ...get(sum),
    ...qAt,
    ...i32Load16S,
    ...cAt,
    ...i32Load8S,
    ...i32Mul,
    ...i32Add,
    ...set(sum),
    ...advance(1),
    ...br(0),
    ...end,
    ...end,
    ...get(sum),
    ...end,
  ];
  const locals = vec([
    [...u32(1), I32],
    [...u32(2), V128],
    [...u32(1), I32],
  ]);
  return [...locals, ...code];
}

/**
 * The loop of a batch over slots (params 3: slots, 4: count, 5: out; local 6: j, a byte offset, 4 a step):
 * for each j < 4 * count, `before`, then out[j] (int32 at out + j) = the i32 `value` leaves; `at` pushes
 * base + slots[j] * stride (params 1 and 2).
 */
function eachSlot(body: (at: number[]) => { before: number[]; value: number[] }): number[] {
  const [base, stride, slots, count, out, j] = [1, 2, 3, 4, 5, 6];
  const at = [...get(base), ...get(slots), ...get(j), ...i32Add, ...i32Load, ...get(stride), ...i32Mul, ...i32Add];
  const { before, value } = body(at);
  return [
    ...block,
    ...loop,
    // j >= 4 * count: done
    ...get(j),
    ...get(count),
    ...i32Const(2),
    ...i32Shl,
    ...i32GeU,
    ...brIf(1),
    ...before,
    ...get(out),
    ...get(j),
    ...i32Add,
    ...value,
    ...i32Store,
    ...get(j),
    ...i32Const(4),
    ...i32Add,
    ...set(j),
    ...br(0),
    ...end,
    ...end,
  ];
}

/** dots(q, base, stride, slots, count, out), its locals and code: params 0-5; local 6: j. */
function dotsBody(): number[] {
  const [q, stride] = [0, 2];
  // out[j] = dot(q, base + slots[j] * stride, stride)
  const code = [...eachSlot((at) => ({ before: [], value: [...get(q), ...at, ...get(stride), ...call(0)] })), ...end];
  return [...vec([[...u32(1), I32]]), ...code];
}

/**
 * signSums(q, base, bytes, slots, count, out), its locals and code: params 0-5; locals 6: j (a byte
 * offset, 4 a step), 7: o (the slot's first sign byte), 8: t (its byte); v128: 9 acc, 10 bits (1, 2, 4,
 * ... 128 twice), 11 spread (lanes 0-7 take byte 0, lanes 8-15 byte 1), 12 m (the set bits' lanes).
 */
function signSumsBody(): number[] {
  const [q, bytes, o, t, acc, bits, spread, m] = [0, 2, 7, 8, 9, 10, 11, 12];
  const powers = [1, 2, 4, 8, 16, 32, 64, 128];
  const qAt = (offset: number) => [...get(q), ...get(t), ...i32Const(4), ...i32Shl, ...i32Add, ...v128Load(offset)];
  const sums = (at: number[]) => ({
    before: [
      // o = base + slots[j] * bytes; acc = 0; t = 0
      ...at,
      ...set(o),
      ...i8x16Const(new Array(16).fill(0)),
      ...set(acc),
      ...i32Const(0),
      ...set(t),
      ...block,
      ...loop,
      ...get(t),
      ...get(bytes),
      ...i32GeU,
      ...brIf(1),
      // m = lanes where bytes t, t + 1 have the lane's bit: -1, else 0
      ...get(o),
      ...get(t),
      ...i32Add,
      ...v128Load16Splat,
      ...get(spread),
      ...i8x16Swizzle,
      ...get(bits),
      ...v128And,
      ...get(bits),
      ...i8x16Eq,
      ...tee(m),
      // acc += dot(low 8 of m, q[8t ..]) + dot(high 8 of m, q[8t + 8 ..])
      ...i16x8ExtendLowI8x16S,
      ...qAt(0),
      ...i32x4DotI16x8S,
      ...get(acc),
      ...i32x4Add,
      ...get(m),
      ...i16x8ExtendHighI8x16S,
      ...qAt(16),
      ...i32x4DotI16x8S,
      ...i32x4Add,
      ...set(acc),
      ...get(t),
      ...i32Const(2),
      ...i32Add,
      ...set(t),
      ...br(0),
      ...end,
      ...end,
    ],
    // 0 - the lanes of acc
    value: [...i32Const(0), ...[0, 1, 2, 3].flatMap((l) => [...get(acc), ...i32x4ExtractLane(l), ...i32Sub])],
  });
  const code = [
    ...i8x16Const([...powers, ...powers]),
    ...set(bits),
    ...i8x16Const([0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]),
    ...set(spread),
    ...eachSlot(sums),
    ...end,
  ];
  const locals = vec([
    [...u32(3), I32],
    [...u32(4), V128],
  ]);
  return [...locals, ...code];
}

/** The module's bytes; its memory import ("e", "m") is shared, of at most `maxPages` 64 KiB pages. */
export function dotModuleBytes(maxPages: number): Uint8Array {
  const dotType = [0x60, ...vec([[I32], [I32], [I32]]), ...vec([[I32]])];
  const memoryImport = [...name('e'), ...name('m'), 0x02, 0x03, ...u32(1), ...u32(maxPages)]; // limits: shared, with a maximum
  const dotCode = dotBody();
  const dotsCode = dotsBody();
  const signSumsCode = signSumsBody();
  const dotsType = [0x60, ...vec([[I32], [I32], [I32], [I32], [I32], [I32]]), ...vec([])];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00], // "\0asm", version 1
    ...section(1, vec([dotType, dotsType])),
    ...section(2, vec([memoryImport])),
    ...section(3, vec([u32(0), u32(1), u32(1)])), // the functions' types: dot 0, dots 1, signSums 1
    ...section(
      7, // exported functions
      vec([
        [...name('dot'), 0x00, ...u32(0)],
        [...name('dots'), 0x00, ...u32(1)],
        [...name('signSums'), 0x00, ...u32(2)],
      ]),
    ),
    ...section(10, vec([dotCode, dotsCode, signSumsCode].map((body) => [...u32(body.length), ...body]))),
  ]);
}
