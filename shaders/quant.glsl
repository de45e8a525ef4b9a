// GGUF's block formats (VKGMM_DT_Q8_0 ... VKGMM_DT_Q3_K), dequantized in the kernel's inner loop from
// rhs's 32-bit words (rhs_word, bindings.glsl): no dequantized copy of the weights exists anywhere. Only
// gmm's VKGMM_BLOCK_RHS builds call the decoders (glslang drops uncalled functions from the others).
//
// Blocks lie along rhs's contiguous axis (k for [n, k] rows, n for [k, n]), each row whole blocks, and
// the view starts at a binding offset (the host checks both), so value i of the operand is value i % B
// of block i / B, which starts at byte (i / B) * S. dequant4(i) gives values i .. i+3 for i a multiple
// of 4: they share a block and, in every format here, one scale and four adjacent quant fields.
// The arithmetic is that of ggml's dequantize_row_* (ggml-quants.c), in fp32 from the fp16 scales.

// Word w of the blocks: from the storage buffer bound at the view (rhs_off 0), or in the VKGMM_TEXEL build
// from the 32-bit texel view of the whole buffer, rhs_off words in (CPU drivers gather texels faster).
uint q_word(uint w) {
#ifdef VKGMM_TEXEL
  uint a = pc.rhs_off + w;
  return texelFetch(rhs_tex, int(a >> 2))[a & 3u];
#else
  return rhs_word(w);
#endif
}
// Four bytes from byte b on (any alignment: two words when they straddle one).
uint q_bytes4(uint b) {
  uint s = (b & 3u) * 8u, lo = q_word(b >> 2);
  return s == 0u ? lo : (lo >> s) | (q_word((b >> 2) + 1u) << (32u - s));
}
// The fp16 at even byte b of its word w (never across words).
float q_half_of(uint w, uint b) { return unpackHalf2x16((b & 2u) != 0u ? w >> 16 : w).x; }
float q_half(uint b) { return q_half_of(q_word(b >> 2), b); }
// The two bytes at even byte b, in the low 16 bits (one word: never across words).
uint q_pair(uint b) { return q_word(b >> 2) >> ((b & 2u) * 8u); }
// The signed `bits`-wide fields at bit `at` of each of u's four bytes.
vec4 q_fields(uint u, uint at, int bits) {
  int v = int(u);
  return vec4(bitfieldExtract(v, int(at), bits), bitfieldExtract(v, int(at) + 8, bits), bitfieldExtract(v, int(at) + 16, bits),
              bitfieldExtract(v, int(at) + 24, bits));
}
// The unsigned fields likewise, widened as signed ints: CPUs without an unsigned int -> float conversion
// (x86 before AVX-512) widen a uint in several instructions, an int in one.
vec4 q_ufields(uint u, uint at, int bits) {
  return vec4(ivec4(bitfieldExtract(u, int(at), bits), bitfieldExtract(u, int(at) + 8, bits),
                    bitfieldExtract(u, int(at) + 16, bits), bitfieldExtract(u, int(at) + 24, bits)));
}
// Nibbles of four bytes: the low ones (values j < B/2 of the 4-bit formats) or the high ones.
uint q_nibbles(uint u, bool high) { return (high ? u >> 4 : u) & 0x0f0f0f0fu; }

// mxfp4: the E8M0 scale halved (2^(e - 128)), for the e2m1 values doubled to integers below; e < 2
// gives the subnormals 2^-128 and 2^-127, as ggml's ggml_e8m0_to_fp32_half.
float q_e8m0_half(uint e) { return uintBitsToFloat(e < 2u ? (0x00200000u << e) : ((e - 1u) << 23)); }
// e2m1 nibble n doubled: magnitudes 0, 1, 2, 3, 4, 6, 8, 12 (bits 0-2) as the nibbles of one constant,
// picked by a shift, and the sign (bit 3) set on the float: a CPU driver turns a 16-entry table into a
// gather per value.
float q_e2m1x2(uint n) {
  float m = float((0xC8643210u >> ((n & 7u) << 2)) & 15u);
  return uintBitsToFloat(floatBitsToUint(m) | ((n & 8u) << 28));
}

// q4_K: sub-block j's (0..7) 6-bit scale and min, packed in the 12 bytes at s: j < 4 in the low six
// bits of bytes j and j + 4; j >= 4 in byte j + 4's nibbles, topped by the high two bits of bytes
// j - 4 (scale) and j (min).
// sw holds the 12 bytes as three words, so j's bytes are picked by shifts (no branch on j).
uvec2 q4k_scale_min(uvec3 sw, uint j) {
  uint at = (j & 3u) * 8u;
  uint lo = (sw.x >> at) & 0xffu, mid = (sw.y >> at) & 0xffu, both = (sw.z >> at) & 0xffu;
  bool low = j < 4u;
  return uvec2(low ? lo & 63u : (both & 15u) | ((lo >> 6) << 4), low ? mid & 63u : (both >> 4) | ((mid >> 6) << 4));
}

// n (<= 9) consecutive words from word w on (r[j] = q_word(w + j), 0 past n). The texel build fetches
// each 4-word texel of the run once: a CPU driver's texel fetch costs about as much whichever of its
// words is wanted, so q_word per word would fetch each texel up to four times. There rhs_off is a
// multiple of 4 words (texel_views.cpp), so w alone places the run in its texels: at compile time where
// the format aligns it (q4_K's 144-byte super-blocks).
void q_word_run(uint w, uint n, out uint r[9]) {
#ifdef VKGMM_TEXEL
  uint t = (pc.rhs_off >> 2) + (w >> 2), o = w & 3u;
  uvec4 x0 = texelFetch(rhs_tex, int(t));
  uvec4 x1 = o + n > 4u ? texelFetch(rhs_tex, int(t + 1u)) : uvec4(0u);
  uvec4 x2 = o + n > 8u ? texelFetch(rhs_tex, int(t + 2u)) : uvec4(0u);
  uint x[12] = uint[12](x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w, x2.x, x2.y, x2.z, x2.w);
  [[unroll]] for (uint j = 0u; j < 9u; ++j)
    r[j] = j >= n ? 0u : o == 0u ? x[j] : o == 1u ? x[j + 1u] : o == 2u ? x[j + 2u] : x[j + 3u];
#else
  [[unroll]] for (uint j = 0u; j < 9u; ++j) r[j] = j < n ? rhs_word(w + j) : 0u;
#endif
}

// `count` (<= 8) words of bytes from byte b (< 4) of the words r on (r must hold the last byte's word).
void q_words_in(uint r[9], uint b, uint count, out uint w[8]) {
  uint s = b * 8u;
  [[unroll]] for (uint j = 0u; j < 8u; ++j)
    w[j] = j >= count ? 0u : s == 0u ? r[j] : (r[j] >> s) | (r[j + 1u] << (32u - s));
}
// `count` (<= 8) words of bytes from byte b on, any alignment, each word read once: an unaligned run
// takes one word more, which still holds the run's last byte (so the read stays inside the blocks).
void q_words(uint b, uint count, out uint w[8]) {
  uint r[9];
  q_word_run(b >> 2, (b & 3u) == 0u ? count : count + 1u, r);
  q_words_in(r, b & 3u, count, w);
}

// A step: Q_STEP_VALUES consecutive values at a multiple of that many. The whole-block formats
// (q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, mxfp4): a block of 32, its head (scales; q5's high bits) before
// its quants. q6_K and q5_K: a 32-value sub-block of a 256-value super-block. q4_K: 64 values, the two
// sub-blocks 2c and 2c + 1 that share chunk c's 32 quant bytes (the low nibbles, then the high ones), so
// the walk reads each quant word once for both. q2_K and q3_K: a 32-value part of a half super-block, two
// bits of each of its 32 quant bytes (q3_K: and a bit of each of its 32 hmask bytes), or where the walk
// takes four parts a step (Q_WIDE_PARTS), the whole half. Within a step every format decodes 4 values (a
// quad) from one 32-bit word of its quant bytes (and, q6_K, q5_K and q3_K, one word of its high bits), and
// a step is one, two or (q2_K, q3_K of four parts) eight runs of one scale (and one min). QStep is what a
// step's values need beside those words: read once per step by the block walk (q_step_walk, gmm.comp), or
// per 4 values by dequant4.
struct QStep {
  uint run, hi_run;      // byte offsets of the quant bytes (q6_K: ql) and of the high bits (qh)
  // q6_K, q5_K: the quants' nibble (0: low, 4: high); the high bits' place in qh's bytes; q2_K, q3_K: the
  // first part's bit pair and hmask bit
  uint shift, hi_shift;
  vec2 scale;            // each run's scale (a step of one run: .x); q2_K, q3_K: d
  vec2 mins;             // each run's min, taken off its values (q4_K, q5_K: dmin * m; q4_1, q5_1: -m);
                         // q2_K: dmin
  uint bits;             // q5_0, q5_1: the block's 32 high bits (bit j: value j's fifth bit)
  // q2_K, q3_K: the step's runs' codes, run r in byte r % 4 of codes[r / 4] (q2_K: scale nibble, min
  // nibble; q3_K: the 6-bit scale before its - 32), scaled by d (and dmin) by q_run_scale, q_run_min
  uvec2 codes;
};
// A step with no fields set: each reader fills those its format has.
QStep q_step_none() { return QStep(0u, 0u, 0u, 0u, vec2(0.0), vec2(0.0), 0u, uvec2(0u)); }

// rhs's format (gmm.comp's RHS_TYPE): its row of sizes (VKGMM_DTYPES) and walk (VKGMM_BLOCK_FORMATS),
// field by field, else 0 (the step: 4) for an element type. Each is a specialization-constant expression,
// a sum over the rows of (RHS_TYPE is the row) * its field, which the driver's SPIR-V reader evaluates to
// one constant before it inlines anything; a function of a type argument would be inlined at every call as
// the whole sum and folded only after, which multiplies a block-format pipeline's compile.
#define VKGMM_Q_VALUES(name, NAME, value, values, bytes, ggml) \
  +uint(values > 1 && RHS_TYPE == uint(value)) * uint(values)
#define VKGMM_Q_BYTES(name, NAME, value, values, bytes, ggml) +uint(values > 1 && RHS_TYPE == uint(value)) * uint(bytes)
#define VKGMM_Q_ROW_any(NAME, step, head, run_quads, run_words, mins, high, scales, bits, offset, table) +uint(RHS_TYPE == VKGMM_DT_##NAME)
#define VKGMM_Q_ROW_step(NAME, step, head, run_quads, run_words, mins, high, scales, bits, offset, table) +uint(RHS_TYPE == VKGMM_DT_##NAME) * uint(step)
#define VKGMM_Q_ROW_head(NAME, step, head, run_quads, run_words, mins, high, scales, bits, offset, table) +uint(RHS_TYPE == VKGMM_DT_##NAME) * uint(head)
#define VKGMM_Q_ROW_run_quads(NAME, step, head, run_quads, run_words, mins, high, scales, bits, offset, table) +uint(RHS_TYPE == VKGMM_DT_##NAME) * uint(run_quads)
#define VKGMM_Q_ROW_run_words(NAME, step, head, run_quads, run_words, mins, high, scales, bits, offset, table) +uint(RHS_TYPE == VKGMM_DT_##NAME) * uint(run_words)
#define VKGMM_Q_ROW_mins(NAME, step, head, run_quads, run_words, mins, high, scales, bits, offset, table) +uint(RHS_TYPE == VKGMM_DT_##NAME) * uint(mins)
#define VKGMM_Q_ROW_high(NAME, step, head, run_quads, run_words, mins, high, scales, bits, offset, table) +uint(RHS_TYPE == VKGMM_DT_##NAME) * uint(high)
#define VKGMM_Q_ROW_scales(NAME, step, head, run_quads, run_words, mins, high, scales, bits, offset, table) +uint(RHS_TYPE == VKGMM_DT_##NAME) * uint(scales)
#define VKGMM_Q_ROW_bits(NAME, step, head, run_quads, run_words, mins, high, scales, bits, offset, table) +uint(RHS_TYPE == VKGMM_DT_##NAME) * uint(bits)
#define VKGMM_Q_ROW_offset(NAME, step, head, run_quads, run_words, mins, high, scales, bits, offset, table) +uint(RHS_TYPE == VKGMM_DT_##NAME) * uint(offset)
#define VKGMM_Q_ROW_table(NAME, step, head, run_quads, run_words, mins, high, scales, bits, offset, table) +uint(RHS_TYPE == VKGMM_DT_##NAME) * uint(table)
const uint Q_BLOCK_VALUES = 0u VKGMM_DTYPES(VKGMM_Q_VALUES);
const uint Q_BLOCK_BYTES = 0u VKGMM_DTYPES(VKGMM_Q_BYTES);
const bool Q_IS_BLOCK = (0u VKGMM_BLOCK_FORMATS(VKGMM_Q_ROW_any)) != 0u;
const uint Q_STEP_VALUES = (0u VKGMM_BLOCK_FORMATS(VKGMM_Q_ROW_step)) + uint(!Q_IS_BLOCK) * 4u;  // element types: 4
const uint Q_SCALE_BYTES = 0u VKGMM_BLOCK_FORMATS(VKGMM_Q_ROW_head);  // a whole block's head
// Quads per run of one scale: q6_K's, q2_K's and q3_K's 16 values, the other K formats' sub-blocks, blocks.
const uint Q_RUN_QUADS = (0u VKGMM_BLOCK_FORMATS(VKGMM_Q_ROW_run_quads)) + uint(!Q_IS_BLOCK) * 8u;
// Words of quant bytes per step: word q % Q_RUN_WORDS holds quad q (q4_K: quads q and q + 8, nibbles; q2_K,
// q3_K of four parts: quads q, q + 8, q + 16 and q + 24, two bits each).
const uint Q_RUN_WORDS = (0u VKGMM_BLOCK_FORMATS(VKGMM_Q_ROW_run_words)) + uint(!Q_IS_BLOCK) * 8u;
// Runs with a min taken off (q4_K, q5_K, q4_1, q5_1); steps with a run of high bits, 8 words (q6_K, q5_K,
// q3_K).
const bool Q_HAS_MINS = (0u VKGMM_BLOCK_FORMATS(VKGMM_Q_ROW_mins)) != 0u;
const bool Q_HAS_HIGH = (0u VKGMM_BLOCK_FORMATS(VKGMM_Q_ROW_high)) != 0u;
// The decoder of a step's scales (VKGMM_QS_*), and whether it reads a super-block's lead once per
// super-block.
const uint Q_SCALES = 0u VKGMM_BLOCK_FORMATS(VKGMM_Q_ROW_scales);
const bool Q_HAS_LEAD = Q_SCALES == VKGMM_QS_K_LEAD || Q_SCALES == VKGMM_QS_IQ4XS_LEAD;
// The formats whose steps hold their runs' scales as codes (QStep::codes).
const bool Q_CODED_RUNS = Q_SCALES == VKGMM_QS_Q2K || Q_SCALES == VKGMM_QS_Q3K;
// The steps of Q_STEP_VALUES that one step of the block walk may take (gmm_direct.glsl takes them or 1 by
// its rows per invocation): q2_K's four parts of a half super-block, which take two bits each of the same
// 32 quant bytes (read once for the four: 4x the bytes in flight for the same registers), and in the texel
// build (CPU drivers) q3_K's, whose hmask words GPUs' registers do not hold beside them; else 1
// (interface.h, by which the host's GPU decode sizes its K slices and steps in flight: k_walk_step).
#ifdef VKGMM_TEXEL
const uint Q_WIDE_PARTS = VKGMM_WIDE_PARTS(Q_SCALES, true);
#else
const uint Q_WIDE_PARTS = VKGMM_WIDE_PARTS(Q_SCALES, false);
#endif
// Super-blocks of whole texels (q4_K, q5_K: 144 and 176 bytes): a lead or a run at a texel's start is
// placed at compile time.
const bool Q_TEXEL_BLOCKS = Q_BLOCK_BYTES % 16u == 0u;
// A value's bits before its scale (4, 5, 6, 8), the offset taken off (q - offset), the table of levels
// its code indexes (1: mxfp4's, 2: iq4_nl's; 0: none).
const uint Q_ROW_BITS = 0u VKGMM_BLOCK_FORMATS(VKGMM_Q_ROW_bits);
const uint Q_ROW_OFFSET = 0u VKGMM_BLOCK_FORMATS(VKGMM_Q_ROW_offset);
const uint Q_ROW_TABLE = 0u VKGMM_BLOCK_FORMATS(VKGMM_Q_ROW_table);

// The formats whose step is a whole block, its scale (fp16 d, or mxfp4's E8M0 byte) before the quants.
const bool Q_WHOLE_BLOCK = Q_SCALE_BYTES != 0u;
// A whole block's scale from the word holding its first byte, at byte b & 3 of it: an fp16 d, or where the
// head is one byte (mxfp4), an E8M0 exponent.
float q_block_scale(uint word, uint b) {
  return Q_SCALE_BYTES == 1u ? q_e8m0_half((word >> ((b & 3u) * 8u)) & 0xffu) : q_half_of(word, b);
}

// q4_K: {fp16 d, dmin; uint8 scales[12]; uint8 q[128]}, 144 bytes; value = d * scale * q - dmin * min.
// q5_K: {fp16 d, dmin; uint8 scales[12]; uint8 qh[32]; uint8 q[128]}, 176 bytes: the same, and chunk c's
// value r (< 32: low nibbles) takes bit 2c of qh[r] as its fifth bit, value r + 32 bit 2c + 1.
// Their lead (d, dmin, scales) is the super-block's first texel: 144 and 176 bytes are whole texels, and
// rhs starts at a texel (texel_views.cpp), so the word index is rounded down to a texel to say so to the
// compiler (q_word_run then places no words by runtime selects). iq4_xs's lead is its first 2 words (136
// bytes: super-blocks start at a word).
uvec4 q_lead_at(uint i) {
  uint r[9], w = (i >> 8) * (Q_BLOCK_BYTES / 4u);
  bool texels = Q_TEXEL_BLOCKS;
  q_word_run(texels ? w & ~3u : w, texels ? 4u : 2u, r);
  return uvec4(r[0], r[1], r[2], r[3]);
}
// The step at i of the super-block whose lead is `head`: chunk c = i / 64's quant bytes (q5_K: and its high
// bits) and the scales and mins of the step's sub-blocks.
// q4_K's steps are whole chunks (64 values, two runs: the low nibbles, then the high ones); q5_K's are
// half chunks (32 values, one run: one nibble and one qh bit of each byte), so that a step's quant and qh
// words (16 per column) stay in registers: a 64-value q5_K step spilled on RDNA3's decode tile.
QStep q4k_step(uvec4 head, uint i) {
  QStep s = q_step_none();
  uint c = (i >> 6) & 3u, base = (i >> 8) * Q_BLOCK_BYTES;
  uint second = Q_STEP_VALUES == 32u ? (i >> 5) & 1u : 0u;  // q5_K: the chunk's high nibbles
  bool q5 = Q_HAS_HIGH;
  s.run = base + (q5 ? 48u : 16u) + c * 32u;
  s.hi_run = q5 ? base + 16u : 0u;
  s.shift = 4u * second;
  s.hi_shift = 2u * c + second;
  uvec2 lo = q4k_scale_min(head.yzw, 2u * c + second), hi = q4k_scale_min(head.yzw, 2u * c + 1u);
  vec2 dm = unpackHalf2x16(head.x);
  s.scale = dm.x * vec2(lo.x, hi.x);
  s.mins = dm.y * vec2(lo.y, hi.y);
  return s;
}

// iq4_xs: {fp16 d; uint16 scales_h; uint8 scales_l[4]; uint8 q[128]}, 136 bytes, led by d, scales_h and
// scales_l (head.x, head.y). A step is a 32-value sub-block ib, its 16 quant bytes packed as iq4_nl's, its
// scale d * (ls - 32) with ls nibble ib of scales_l topped by bits 2 ib, 2 ib + 1 of scales_h.
QStep iq4xs_step(uvec4 head, uint i) {
  QStep s = q_step_none();
  uint ib = (i >> 5) & 7u;
  s.run = (i >> 8) * Q_BLOCK_BYTES + 8u + 16u * ib;
  uint ls = ((head.y >> (4u * ib)) & 15u) | (((head.x >> (16u + 2u * ib)) & 3u) << 4);
  s.scale = vec2(unpackHalf2x16(head.x).x * float(int(ls) - 32), 0.0);
  return s;
}
// The step at i of a super-block led by `head` (the formats with a lead).
QStep q_lead_step(uvec4 head, uint i) {
  return Q_SCALES == VKGMM_QS_IQ4XS_LEAD ? iq4xs_step(head, i) : q4k_step(head, i);
}

// A whole block's min and high bits from the 8 bytes of its head hw (.x: bytes 0-3): q4_1 {fp16 d, m;
// uint8 q[16]} and q5_1 {fp16 d, m; uint8 qh[4]; uint8 q[16]}: d * q + m, so a format with mins has its
// min -m in the fp16 after d; q5_0 {fp16 d; uint8 qh[4]; uint8 q[16]}: a 5-bit format's fifth bits are
// the head's last 4 bytes, qh, whose bit j is value j's.
void q_head_fields(uvec2 hw, inout QStep s) {
  if (Q_HAS_MINS) s.mins = vec2(-unpackHalf2x16(hw.x).y, 0.0);
  if (Q_ROW_BITS == 5u) {
    uint at = (Q_SCALE_BYTES - 4u) * 8u;  // 16 (q5_0) or 32 (q5_1): qh's first bit in hw
    s.bits = at == 32u ? hw.y : (hw.x >> at) | (hw.y << (32u - at));
  }
}
const bool Q_HEAD_WIDE = Q_SCALE_BYTES > 2u;

// A super-block without a lead: its scales read with each step. Halves h = i / 128 of 128 values, parts
// t = (i / 32) % 4 of a half, runs of 16 values (l = i % 32 < 16, or not).
// q6_K: {uint8 ql[128], qh[64]; int8 scales[16]; fp16 d}. Its step is part t: ql's low (t < 2) or high
// nibbles of bytes l (+ 32 for odd t) and qh's bits 2t, 2t + 1 of byte l as bits 4, 5; value = d *
// scale[8h + 2t + l / 16] * (q - 32). The step's two scale bytes are adjacent at an even byte: one word.
// q2_K: {uint8 scales[16]; uint8 qs[64]; fp16 d, dmin}, 84 bytes; q3_K: {uint8 hmask[32]; uint8 qs[64];
// uint8 scales[12]; fp16 d}, 110 bytes. Their step is `parts` parts from part t on: part t + p takes bits
// 2 (t + p), + 1 of qs[32h + l] (q3_K: and bit 4h + t + p of hmask[l] as bit 2), and the step's run r has
// scale j = 8h + 2t + r. q2_K's scale byte j holds the scale (low nibble) and the min (high nibble): value =
// d * (sc & 15) * q - dmin * (sc >> 4). q3_K's value = d * (sc_j - 32) * (q - 4), sc_j 6 bits: nibble h of
// scales[j % 8], topped by bits 2 (j / 4), + 1 of scales[8 + j % 4]. A part's two scale bytes (and q3_K's
// top bits of them) are adjacent at an even byte: one word read each; a half's are 8 bytes at a word
// (q3_K: at an even byte, and 4 bytes of top bits).
QStep q_sub_step(uint i, uint parts) {
  QStep s = q_step_none();
  // A step of four parts starts a half (part 0): a constant, which the decoders' shifts fold.
  uint base = (i >> 8) * Q_BLOCK_BYTES, h = (i >> 7) & 1u, t = parts == 1u ? (i >> 5) & 3u : 0u;
  if (Q_SCALES == VKGMM_QS_Q6K) {
    s.run = base + h * 64u + (t & 1u) * 32u;
    s.hi_run = base + 128u + h * 32u;
    s.shift = t >= 2u ? 4u : 0u;
    s.hi_shift = 2u * t;
    int both = int(q_pair(base + 192u + h * 8u + 2u * t));
    s.scale = q_half(base + 208u) * vec2(bitfieldExtract(both, 0, 8), bitfieldExtract(both, 8, 8));
  } else if (Q_SCALES == VKGMM_QS_Q2K) {
    s.run = base + 16u + 32u * h;
    s.shift = 2u * t;
    // 84-byte blocks start at a word: a half's 8 scale bytes are words base / 4 + 2h, + 1.
    uint w = (base >> 2) + 2u * h;
    s.codes = parts == 1u ? uvec2(q_pair(base + 8u * h + 2u * t)) : uvec2(q_word(w), q_word(w + 1u));
    vec2 dm = unpackHalf2x16(q_word((base >> 2) + 20u));  // d, dmin: bytes 80-83
    s.scale.x = dm.x;
    s.mins.x = dm.y;
  } else {
    s.run = base + 32u + 32u * h;
    s.hi_run = base;
    s.shift = 2u * t;
    s.hi_shift = 4u * h + t;
    // The bytes of the runs' low nibbles (lo0: runs 0-3, lo1: 4-7) and of their top bits, which lie at
    // bits 0-1 of top's bytes for runs 0-3 and 2-3 for runs 4-7 once top is shifted by 4h.
    uint lo0, lo1, top;
    if (parts == 1u) {
      lo0 = lo1 = q_pair(base + 96u + 2u * t);
      top = q_pair(base + 104u + 2u * (t & 1u)) >> (2u * (t >> 1));
    } else {
      uint w[8];
      q_words(base + 96u, 3u, w);
      lo0 = w[0], lo1 = w[1], top = w[2];
    }
    top >>= 4u * h;
    s.codes = ((uvec2(lo0, lo1) >> (4u * h)) & 0x0f0f0f0fu) | ((uvec2(top, top >> 2) & 0x03030303u) << 4);
    s.scale.x = q_half(base + 108u);
  }
  return s;
}

QStep q_step(uint i) {
  if (Q_HAS_LEAD) return q_lead_step(q_lead_at(i), i);
  if (!Q_WHOLE_BLOCK) return q_sub_step(i, 1u);
  // q8_0 {fp16 d; int8 q[32]}: d * q. q4_0 {fp16 d; uint8 q[16]}: value j is nibble j % 16 (low first),
  // d * (q - 8). mxfp4 {uint8 e; uint8 q[16]}: nibbles as q4_0, e2m1 values times the scale. iq4_nl {fp16 d;
  // uint8 q[16]}: nibbles as q4_0, d * kvalues_iq4nl[q]. q4_1, q5_0, q5_1: above.
  QStep s = q_step_none();
  uint base = (i >> 5) * Q_BLOCK_BYTES;
  s.run = base + Q_SCALE_BYTES;
  s.scale = vec2(q_block_scale(q_word(base >> 2), base), 0.0);
  if (Q_HEAD_WIDE) q_head_fields(uvec2(q_bytes4(base), q_bytes4(base + 4u)), s);
  return s;
}

// A step's words as q_raw4 takes them, prepared once where the step is read: the quant word shifted to the
// step's field (q6_K's and q5_K's nibble, q2_K's and q3_K's first part's bit pair), the high bits' word to
// its bits (q6_K's pair, q5_K's bit, q3_K's first part's bit), so that no step's shift stays live through
// its quads and each part's field is a constant shift away. Where the high bits hold a value's top bit,
// it comes flipped (q3_K's hmask bits, the top bit of q6_K's pair): the code is then q - offset in
// two's complement, the offset taken off with no operation per value.
uint q_low_word(QStep s, uint raw) { return raw >> s.shift; }
uint q_high_word(QStep s, uint raw) {
  uint flip = Q_SCALES == VKGMM_QS_Q3K ? 0x0f0f0f0fu : Q_SCALES == VKGMM_QS_Q6K ? 0x02020202u : 0u;
  return (raw >> s.hi_shift) ^ flip;
}

// The low four bits of h, bit c moved to bit 8c of a word (a quad's fifth bits, one per byte).
uint q_spread4(uint h) { return (h & 1u) | ((h & 2u) << 7) | ((h & 4u) << 14) | ((h & 8u) << 21); }
// iq4_nl's 16 levels (-127 .. 113): a quartic in n (least squares over the 16 codes) is within 0.477 of
// every level, fused or not, so rounded it is the level exactly, in 6 operations. A CPU driver turns an
// indexed table into a gather per value; four constant words picked by selects took 13.
float q_iq4nl(uint n) {
  float x = float(int(n));
  return round(fma(fma(fma(fma(0.00132472022, x, 0.0412168205), x, -1.50018346), x, 24.7432442), x, -127.043602));
}
// Level n of table t (1: mxfp4's e2m1 values doubled, 2: iq4_nl's).
float q_level(uint t, uint n) { return t == 1u ? q_e2m1x2(n) : q_iq4nl(n); }

// Quad q of step s before the scales: q8_0's q, q4_0's q - 8, q4_1's q, q5_0's q - 16, q5_1's q, iq4_nl's
// level, q4_K's and q5_K's q, q6_K's q - 32, mxfp4's e2m1 values doubled, q2_K's q, q3_K's q - 4; from the
// run's word q % Q_RUN_WORDS and the high bits (q6_K, q5_K: qh's word q % 8; q3_K: hmask's word q % 8;
// q5_0, q5_1: the step's bits), each as q_low_word and q_high_word give them.
vec4 q_raw4(QStep s, uint word, uint hi_word, uint q) {
  // One body for every format, steered by its row (bits, offset, table), not a branch per format: a
  // driver inlines this at every load site of every block-format pipeline before it drops what the
  // specialized type rules out, so its compile time grows with the code here.
  uint bits = Q_ROW_BITS;
  if (bits == 8u) return q_fields(word, 0u, 8);
  // Each value's code u (one per byte), then q - offset as the field with its top bit flipped read
  // signed, or q itself.
  uint u;
  if (bits == 6u) {
    // q6_K: a nibble topped by two high bits.
    u = (word & 0x0f0f0f0fu) | ((hi_word & 0x03030303u) << 4);
  } else if (bits <= 3u) {
    // q2_K, q3_K: two bits by the quad's part, q3_K's third from hmask (inverted: q - 4's).
    uint part = q / Q_RUN_WORDS;
    u = (word >> (2u * part)) & 0x03030303u;
    if (Q_HAS_HIGH) u |= ((hi_word >> part) & 0x01010101u) << 2;
  } else {
    // The nibble formats: the quads past the step's words take the high nibbles (q4_K's 16 quads over 8
    // words, the 8 of a 32-value block over 4; q5_K's step is one nibble, shifted by q_low_word); a fifth bit from
    // qh (q5_K) or the block's bits (q5_0, q5_1); or a level from a table (mxfp4, iq4_nl).
    bool upper = q >= Q_RUN_WORDS;
    u = q_nibbles(word, upper);
    if (bits == 5u)
      u |= (Q_HAS_HIGH ? (hi_word >> (upper ? 1u : 0u)) & 0x01010101u : q_spread4(s.bits >> (4u * q))) << 4;
    uint table = Q_ROW_TABLE;
    if (table != 0u) return vec4(q_level(table, u & 15u), q_level(table, (u >> 8) & 15u), q_level(table, (u >> 16) & 15u), q_level(table, u >> 24));
  }
  // With high bits the code already holds q - offset (q_high_word); the others' offsets flip its top bit here.
  uint offset = Q_ROW_OFFSET, flip = Q_HAS_HIGH ? 0u : offset;
  return offset != 0u ? q_fields(u ^ (flip * 0x01010101u), 0u, int(bits)) : q_ufields(u, 0u, int(bits));
}
// A value is q_run_scale * raw - q_run_min, both fixed over a run of Q_RUN_QUADS quads, so a sum of lhs
// times raw values over a run is scaled once (the walk), and its mins come off lhs's sum over the run.
// q2_K's and q3_K's run code for quad q (QStep::codes).
uint q_run_code(QStep s, uint q) {
  uint r = q / Q_RUN_QUADS;
  return ((r < 4u ? s.codes.x : s.codes.y) >> (8u * (r & 3u))) & 0xffu;
}
float q_run_scale(QStep s, uint q) {
  if (!Q_CODED_RUNS) return q >= Q_RUN_QUADS ? s.scale.y : s.scale.x;
  uint c = q_run_code(s, q);
  return s.scale.x * float(Q_HAS_MINS ? int(c & 15u) : int(c) - 32);
}
float q_run_min(QStep s, uint q) {
  if (!Q_CODED_RUNS) return q >= Q_RUN_QUADS ? s.mins.y : s.mins.x;
  return Q_HAS_MINS ? s.mins.x * float(int(q_run_code(s, q) >> 4)) : 0.0;
}

// Whether the walk scales each value as it decodes it rather than each run's sum (gmm.comp): steps of 64
// values (q4_K's two 32-value runs) with 16 rows per invocation.
bool q_values_scaled(uint rows) { return Q_STEP_VALUES == 64u && rows >= 16u; }

// Quad q of step s scaled: its raw values (q_raw4) times its run's scale, less its run's min.
vec4 q_scaled4(QStep s, uint q, vec4 raw) {
  return fma(vec4(q_run_scale(s, q)), raw, vec4(-q_run_min(s, q)));
}

// The block walk's read of step i (a multiple of parts * Q_STEP_VALUES, parts 1 or Q_WIDE_PARTS): the
// step's scales and quant words (run and, q6_K, q5_K and q3_K, the high bits), each texel fetched once and
// each word prepared as q_raw4 takes it (q_low_word, q_high_word). A whole block is read in one run from
// the word holding its first byte (the head comes with the quants: q4_0 and mxfp4 2 texels, q5_0, q5_1
// and q8_0 up to 3).
// q4_K and q5_K take the lead of i's super-block from the caller (q_lead_at, read once per super-block: 1
// texel per 256 values) and a step's 32 quant bytes are two aligned texels (q4_K: 2 per 64 values; q5_K: 4
// per 32, its 32 qh bytes too). q6_K reads a step's two scales with it, q2_K and q3_K the codes of their
// step's runs and d (and dmin), and each its 32 quant bytes (q6_K, q3_K: and 32 bytes of high bits)
// by words.
void q_step_walk(uint i, uint parts, uvec4 head, out QStep s, out uint w[8], out uint hi[8]) {
  [[unroll]] for (uint j = 0u; j < 8u; ++j) hi[j] = 0u;
  if (Q_WHOLE_BLOCK) {
    uint base = (i >> 5) * Q_BLOCK_BYTES, r[9];
    // Its bytes from byte base & 3 of the first word on: the words a block spans at worst (blocks of a
    // multiple of 4 bytes start at a word, of an even size at an even byte): q4_0 5 (2 + 18 bytes), mxfp4
    // 5 (3 + 17), q4_1 5, q5_0 6, q5_1 6, iq4_nl 5, q8_0 9 (2 + 34); each word holds some of its bytes.
    uint bytes = Q_BLOCK_BYTES;
    q_word_run(base >> 2, (bytes + ((bytes & 3u) == 0u ? 0u : (bytes & 1u) == 0u ? 2u : 3u) + 3u) / 4u, r);
    s = q_step_none();
    s.run = base + Q_SCALE_BYTES;
    s.scale = vec2(q_block_scale(r[0], base), 0.0);
    if (Q_HEAD_WIDE) {
      uint hw[8];
      q_words_in(r, base & 3u, 2u, hw);
      q_head_fields(uvec2(hw[0], hw[1]), s);
    }
    // The quants from byte b of the run on; b < 12 (a head of at most 8 bytes), so whole words are
    // dropped by selects over constant indices (an indexed copy would put r in memory).
    uint b = (base & 3u) + Q_SCALE_BYTES, drop = b >> 2;
    uint r1[9];
    [[unroll]] for (uint j = 0u; j < 9u; ++j)
      r1[j] = drop == 0u ? r[j] : drop == 1u ? (j < 8u ? r[j + 1u] : 0u) : (j < 7u ? r[j + 2u] : 0u);
    q_words_in(r1, b & 3u, Q_RUN_WORDS, w);
  } else if (Q_HAS_LEAD) {
    s = q_lead_step(head, i);
    uint r[9];
    if (Q_TEXEL_BLOCKS) {
      q_word_run((s.run >> 2) & ~3u, 8u, r);
      q_words_in(r, 0u, 8u, w);
    } else {
      q_words(s.run, Q_RUN_WORDS, w);  // iq4_xs: 16 bytes at a word
    }
    if (Q_HAS_HIGH) {
      q_word_run((s.hi_run >> 2) & ~3u, 8u, r);
      q_words_in(r, 0u, 8u, hi);
    }
  } else {
    s = q_sub_step(i, parts);
    q_words(s.run, 8u, w);
    if (Q_HAS_HIGH) q_words(s.hi_run, 8u, hi);
  }
  [[unroll]] for (uint j = 0u; j < 8u; ++j) {
    w[j] = q_low_word(s, w[j]);
    if (Q_HAS_HIGH) hi[j] = q_high_word(s, hi[j]);
  }
}

// Values i .. i+3 (i a multiple of 4) on their own: the step's scales and the one or two words they need.
vec4 dequant4(uint i) {
  uint n = Q_STEP_VALUES;
  QStep s = q_step(i - i % n);
  uint q = (i % n) >> 2;
  uint word = q_low_word(s, q_bytes4(s.run + 4u * (q % Q_RUN_WORDS)));
  uint hi = Q_HAS_HIGH ? q_high_word(s, q_bytes4(s.hi_run + 4u * (q % 8u))) : 0u;
  return q_scaled4(s, q, q_raw4(s, word, hi, q));
}
