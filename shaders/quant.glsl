// GGUF's block formats (VKGMM_DT_Q8_0 ... VKGMM_DT_MXFP4), dequantized in the kernel's inner loop from
// rhs's 32-bit words (rhs_word, bindings.glsl): no dequantized copy of the weights exists anywhere.
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
vec4 q_unsigned(uint u) { return vec4(u & 0xffu, (u >> 8) & 0xffu, (u >> 16) & 0xffu, u >> 24); }
// The signed `bits`-wide fields at bit `at` of each of u's four bytes.
vec4 q_fields(uint u, uint at, int bits) {
  int v = int(u);
  return vec4(bitfieldExtract(v, int(at), bits), bitfieldExtract(v, int(at) + 8, bits), bitfieldExtract(v, int(at) + 16, bits),
              bitfieldExtract(v, int(at) + 24, bits));
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

// A step: 32 consecutive values at a multiple of 32, a block (q8_0, q4_0, mxfp4) or a 32-value
// sub-block of a 256-value super-block (q4_K, q6_K). Within a step every format here decodes 4 values
// from one 32-bit word of its quant bytes (and, q6_K, one word of its high bits) with scales fixed for the
// step. QStep is what a step's values need beside those words: read once per step by the block walk
// (q_step_walk, gmm.comp), or per 4 values by dequant4.
struct QStep {
  uint run, hi_run;      // byte offsets of the quant bytes (q6_K: ql) and of q6_K's qh bytes
  uint shift, hi_shift;  // the nibble (0: low, 4: high) of q4_K's and q6_K's run; q6_K's 2-bit field in qh
  float d, e;            // the scale; q4_K: the min; q6_K: the scale of the step's last 16 values
};
// Words per step of the quant run (word q % q_run_words holds values 4q .. 4q + 3).
uint q_run_words(uint type) { return type == VKGMM_DT_Q4_0 || type == VKGMM_DT_MXFP4 ? 4u : 8u; }
const uint Q_STEP = 32u;

// The formats whose step is a whole block: its bytes, and the scale's (fp16 d, or mxfp4's E8M0 byte)
// before the quants.
bool q_whole_block(uint type) { return type == VKGMM_DT_Q8_0 || type == VKGMM_DT_Q4_0 || type == VKGMM_DT_MXFP4; }
uint q_block_bytes(uint type) { return type == VKGMM_DT_Q8_0 ? 34u : type == VKGMM_DT_Q4_0 ? 18u : 17u; }
uint q_scale_bytes(uint type) { return type == VKGMM_DT_MXFP4 ? 1u : 2u; }
// A whole block's scale from the word holding its first byte, at byte b & 3 of it.
float q_block_scale(uint type, uint word, uint b) {
  return type == VKGMM_DT_MXFP4 ? q_e8m0_half((word >> ((b & 3u) * 8u)) & 0xffu) : q_half_of(word, b);
}
// q4_K's step scales from its super-block's first 16 bytes as words (fp16 d, dmin; scales[12]).
void q4k_step_scales(uvec4 head, uint sub, inout QStep s) {
  uvec2 sm = q4k_scale_min(head.yzw, sub);
  vec2 dm = unpackHalf2x16(head.x);
  s.d = dm.x * float(sm.x);
  s.e = dm.y * float(sm.y);
}

QStep q_step(uint type, uint i) {
  QStep s;
  s.hi_run = 0u;
  s.shift = 0u;
  s.hi_shift = 0u;
  s.e = 0.0;
  if (q_whole_block(type)) {
    // q8_0 {fp16 d; int8 q[32]}: d * q. q4_0 {fp16 d; uint8 q[16]}: value j is nibble j % 16 (low
    // first), d * (q - 8). mxfp4 {uint8 e; uint8 q[16]}: nibbles as q4_0, e2m1 values times the scale.
    uint base = (i >> 5) * q_block_bytes(type);
    s.run = base + q_scale_bytes(type);
    s.d = q_block_scale(type, q_word(base >> 2), base);
  } else if (type == VKGMM_DT_Q4_K) {
    // {fp16 d, dmin; uint8 scales[12]; uint8 q[128]}: 64-value chunks c of 32 bytes, the low nibbles
    // first (sub-block 2c), then the high ones (2c + 1); value = d * scale * q - dmin * min.
    // The head (d, dmin, scales) is one aligned texel.
    uint base = (i >> 8) * 144u, sub = (i >> 5) & 7u, head[9];
    q_word_run(base >> 2, 4u, head);
    s.run = base + 16u + (sub >> 1) * 32u;
    s.shift = (sub & 1u) * 4u;
    q4k_step_scales(uvec4(head[0], head[1], head[2], head[3]), sub, s);
  } else {
    // q6_K: {uint8 ql[128], qh[64]; int8 scales[16]; fp16 d}. Halves h of 128 values; quarter qq of a
    // half takes ql's low (qq < 2) or high nibbles of bytes l (+ 32 for odd qq) and qh's bits 2qq, 2qq + 1
    // of byte l as bits 4, 5; value = d * scale[8h + l / 16 + 2qq] * (q - 32).
    uint base = (i >> 8) * 210u, h = (i >> 7) & 1u, qq = (i >> 5) & 3u;
    s.run = base + h * 64u + (qq & 1u) * 32u;
    s.hi_run = base + 128u + h * 32u;
    s.shift = qq >= 2u ? 4u : 0u;
    s.hi_shift = 2u * qq;
    // The step's two scale bytes share one word (they start at an even byte): one read for both.
    uint sc = base + 192u + h * 8u + 2u * qq;
    int both = int(q_word(sc >> 2) >> ((sc & 2u) * 8u));
    float d = q_half(base + 208u);
    s.d = d * float(bitfieldExtract(both, 0, 8));
    s.e = d * float(bitfieldExtract(both, 8, 8));
  }
  return s;
}

// Values 4q .. 4q + 3 of step s (q < 8) before the scales: q8_0's q, q4_0's q - 8, q4_K's q, q6_K's
// q - 32, mxfp4's e2m1 values doubled; from the run's word q % q_run_words and (q6_K) qh's word q.
vec4 q_raw4(uint type, QStep s, uint word, uint hi_word, uint q) {
  if (type == VKGMM_DT_Q8_0) return q_fields(word, 0u, 8);
  // q - 8 is the nibble with its top bit flipped read as a signed field (no subtraction per value).
  if (type == VKGMM_DT_Q4_0) return q_fields(word ^ 0x88888888u, q >= 4u ? 4u : 0u, 4);
  if (type == VKGMM_DT_MXFP4) {
    uint u = q_nibbles(word, q >= 4u);
    return vec4(q_e2m1x2(u & 15u), q_e2m1x2((u >> 8) & 15u), q_e2m1x2((u >> 16) & 15u), q_e2m1x2(u >> 24));
  }
  if (type == VKGMM_DT_Q4_K) return q_unsigned((word >> s.shift) & 0x0f0f0f0fu);
  // q6_K's q - 32 likewise: the 6-bit field with its top bit flipped, signed.
  uint top = (hi_word >> s.hi_shift) & 0x03030303u;
  return q_fields((((word >> s.shift) & 0x0f0f0f0fu) | (top << 4)) ^ 0x20202020u, 0u, 6);
}
// A value is q_run_scale * raw - q_step_min. The scale holds for runs of 4 * Q_RUN_QUADS values (q6_K:
// 16, the others the whole step), so a sum of lhs times raw values over a run is scaled once (the walk).
uint q_run_quads(uint type) { return type == VKGMM_DT_Q6_K ? 4u : 8u; }
float q_run_scale(uint type, QStep s, uint q) { return type == VKGMM_DT_Q6_K && q >= 4u ? s.e : s.d; }
float q_step_min(uint type, QStep s) { return type == VKGMM_DT_Q4_K ? s.e : 0.0; }

// Values 4q .. 4q + 3 of step s, scaled.
vec4 q_step4(uint type, QStep s, uint word, uint hi_word, uint q) {
  return q_run_scale(type, s, q) * q_raw4(type, s, word, hi_word, q) - q_step_min(type, s);
}

// The block walk's read of step i (a multiple of 32): the step's scales and quant words (run and, q6_K,
// qh), each texel fetched once. A whole block is read in one run from the word holding its first byte
// (the scale comes with the quants: q4_0 and mxfp4 2 texels, q8_0 3); q4_K's super-block head (d, dmin,
// scales, q_step) is one aligned texel and its 32 quant bytes two.
void q_step_walk(uint type, uint i, out QStep s, out uint w[8], out uint hi[8]) {
  [[unroll]] for (uint j = 0u; j < 8u; ++j) hi[j] = 0u;
  if (q_whole_block(type)) {
    uint base = (i >> 5) * q_block_bytes(type), r[9];
    // Its bytes from byte base & 3 of the first word on: 5 words (q4_0: at most 2 + 18 bytes; mxfp4 3 +
    // 17), 9 (q8_0: 2 + 34); each word holds some of the block's bytes.
    q_word_run(base >> 2, type == VKGMM_DT_Q8_0 ? 9u : 5u, r);
    s.run = base + q_scale_bytes(type);
    s.hi_run = 0u;
    s.shift = 0u;
    s.hi_shift = 0u;
    s.d = q_block_scale(type, r[0], base);
    s.e = 0.0;
    uint b = (base & 3u) + q_scale_bytes(type);
    uint r1[9];
    [[unroll]] for (uint j = 0u; j < 9u; ++j) r1[j] = b >= 4u ? (j < 8u ? r[j + 1u] : 0u) : r[j];
    q_words_in(r1, b & 3u, q_run_words(type), w);
  } else {
    s = q_step(type, i);
    q_words(s.run, 8u, w);
    if (type == VKGMM_DT_Q6_K) q_words(s.hi_run, 8u, hi);
  }
}

// Values i .. i+3 (i a multiple of 4) on their own: the step's scales and the one or two words they need.
vec4 dequant4(uint type, uint i) {
  QStep s = q_step(type, i & ~31u);
  uint q = (i & 31u) >> 2;
  uint word = q_bytes4(s.run + 4u * (q % q_run_words(type)));
  return q_step4(type, s, word, type == VKGMM_DT_Q6_K ? q_bytes4(s.hi_run + 4u * q) : 0u, q);
}
