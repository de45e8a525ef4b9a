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

// A step: q_step_values(type) consecutive values at a multiple of that many. The whole-block formats (q8_0,
// q4_0, q4_1, q5_0, q5_1, iq4_nl, mxfp4): a block of 32, its head (scales, q5's high bits) before its
// quants. q6_K: a 32-value sub-block of its 256-value super-block. q4_K: 64 values, the two sub-blocks 2c
// and 2c + 1 that share chunk c's 32 quant bytes (the low nibbles, then the high ones), so the walk reads
// each quant word once for both. Within a step every format decodes 4 values (a quad) from one 32-bit word
// of its quant bytes (and, q6_K, one word of its high bits), and a step is one or two runs of one scale
// (and one min). QStep is what a step's values need beside those words: read once per step by the block
// walk (q_step_walk, gmm.comp), or per 4 values by dequant4.
struct QStep {
  uint run, hi_run;      // byte offsets of the quant bytes (q6_K: ql) and of q6_K's qh bytes
  uint shift, hi_shift;  // q6_K: the nibble (0: low, 4: high) of ql, and the 2-bit field in qh
  vec2 scale;            // each run's scale (a step of one run: .x)
  vec2 mins;             // each run's min, taken off its values (q4_K: dmin * m; q4_1, q5_1: -m); else 0
  uint bits;             // q5_0, q5_1: the block's 32 high bits (bit j: value j's fifth bit)
};
// The block formats' sizes (VKGMM_DTYPES) and walk (VKGMM_BLOCK_FORMATS), one field at a time: the
// type's row, else the element types' value (a step of 4 values, one run).
#define VKGMM_Q_VALUES(name, NAME, value, values, bytes, ggml) values > 1 && type == uint(value) ? uint(values) :
#define VKGMM_Q_BYTES(name, NAME, value, values, bytes, ggml) values > 1 && type == uint(value) ? uint(bytes) :
uint q_block_values(uint type) { return VKGMM_DTYPES(VKGMM_Q_VALUES) 0u; }
uint q_block_bytes(uint type) { return VKGMM_DTYPES(VKGMM_Q_BYTES) 0u; }
#define VKGMM_Q_FIELD(field)                                                                             \
  uint q_row_##field(uint type) {                                                                            \
    VKGMM_BLOCK_FORMATS(VKGMM_Q_FIELD_##field)                                                           \
    return 0u;                                                                                           \
  }
#define VKGMM_Q_FIELD_step(NAME, step, head, run_quads, run_words, mins, high, lead) if (type == VKGMM_DT_##NAME) return uint(step);
#define VKGMM_Q_FIELD_head(NAME, step, head, run_quads, run_words, mins, high, lead) if (type == VKGMM_DT_##NAME) return uint(head);
#define VKGMM_Q_FIELD_run_quads(NAME, step, head, run_quads, run_words, mins, high, lead) if (type == VKGMM_DT_##NAME) return uint(run_quads);
#define VKGMM_Q_FIELD_run_words(NAME, step, head, run_quads, run_words, mins, high, lead) if (type == VKGMM_DT_##NAME) return uint(run_words);
#define VKGMM_Q_FIELD_mins(NAME, step, head, run_quads, run_words, mins, high, lead) if (type == VKGMM_DT_##NAME) return uint(mins);
#define VKGMM_Q_FIELD_high(NAME, step, head, run_quads, run_words, mins, high, lead) if (type == VKGMM_DT_##NAME) return uint(high);
#define VKGMM_Q_FIELD_lead(NAME, step, head, run_quads, run_words, mins, high, lead) if (type == VKGMM_DT_##NAME) return uint(lead);
VKGMM_Q_FIELD(step)
VKGMM_Q_FIELD(head)
VKGMM_Q_FIELD(run_quads)
VKGMM_Q_FIELD(run_words)
VKGMM_Q_FIELD(mins)
VKGMM_Q_FIELD(high)
VKGMM_Q_FIELD(lead)
// Values per step (element types: 4); quads per run of one scale; words of quant bytes per step (word
// q % q_run_words holds quad q; q4_K: quads q and q + 8, nibbles).
uint q_step_values(uint type) { return q_row_step(type) == 0u ? 4u : q_row_step(type); }
uint q_run_quads(uint type) { return q_row_step(type) == 0u ? 1u : q_row_run_quads(type); }
uint q_run_words(uint type) { return q_row_step(type) == 0u ? 1u : q_row_run_words(type); }
uint q_head(uint type) { return q_row_head(type); }
bool q_whole_block(uint type) { return q_row_head(type) != 0u; }
bool q_has_mins(uint type) { return q_row_mins(type) != 0u; }
bool q_has_high(uint type) { return q_row_high(type) != 0u; }
bool q_has_lead(uint type) { return q_row_lead(type) != 0u; }

// A whole block's step at i: its quants' offset; the format's step_* fills in the rest from the head.
QStep q_whole(uint type, uint i) {
  return QStep((i >> 5) * q_block_bytes(type) + q_head(type), 0u, 0u, 0u, vec2(0.0), vec2(0.0), 0u);
}
float q_half_lo(uint w) { return unpackHalf2x16(w).x; }
float q_half_hi(uint w) { return unpackHalf2x16(w).y; }

// ---- Each format's math: QStep step_NAME(i, head) and vec4 raw4_NAME(s, word, hi_word, q) -------------
// step_NAME: the step at i (a multiple of its values); head is the block's first 8 bytes (.xy) for a
// whole block, the super-block's 16 (q4_K's lead), else unused. raw4_NAME: quad q of step s before the
// scales (value = run scale * raw - run min), from the run's word q % q_run_words and (q6_K) qh's word q.

// q8_0 {fp16 d; int8 q[32]}: d * q.
QStep step_Q8_0(uint i, uvec4 h) {
  QStep s = q_whole(VKGMM_DT_Q8_0, i);
  s.scale.x = q_half_lo(h.x);
  return s;
}
vec4 raw4_Q8_0(QStep s, uint word, uint hi_word, uint q) { return q_fields(word, 0u, 8); }

// q4_0 {fp16 d; uint8 q[16]}: value j is nibble j % 16 (low first), d * (q - 8); q - 8 is the nibble with
// its top bit flipped read as a signed field (no subtraction per value).
QStep step_Q4_0(uint i, uvec4 h) {
  QStep s = q_whole(VKGMM_DT_Q4_0, i);
  s.scale.x = q_half_lo(h.x);
  return s;
}
vec4 raw4_Q4_0(QStep s, uint word, uint hi_word, uint q) { return q_fields(word ^ 0x88888888u, q >= 4u ? 4u : 0u, 4); }

// q4_1 {fp16 d, m; uint8 q[16]}: nibbles as q4_0, d * q + m.
QStep step_Q4_1(uint i, uvec4 h) {
  QStep s = q_whole(VKGMM_DT_Q4_1, i);
  s.scale.x = q_half_lo(h.x);
  s.mins.x = -q_half_hi(h.x);
  return s;
}
vec4 raw4_Q4_1(QStep s, uint word, uint hi_word, uint q) { return q_ufields(word, q >= 4u ? 4u : 0u, 4); }

// q5_0 {fp16 d; uint8 qh[4]; uint8 q[16]}: value j's low four bits are nibble j as in q4_0, its fifth bit
// j of qh; d * (q - 16). q5_1 {fp16 d, m; uint8 qh[4]; uint8 q[16]}: the same q, d * q + m.
// q5_quad: quad q's four 5-bit fields, one per byte: the nibbles, and bit 4q + c of qh as bit 4 of byte c.
uint q5_quad(uint word, uint bits, uint q) {
  uint h = (bits >> (4u * q)) & 15u;
  uint spread = (h & 1u) | ((h & 2u) << 7) | ((h & 4u) << 14) | ((h & 8u) << 21);
  return q_nibbles(word, q >= 4u) | (spread << 4);
}
QStep step_Q5_0(uint i, uvec4 h) {
  QStep s = q_whole(VKGMM_DT_Q5_0, i);
  s.scale.x = q_half_lo(h.x);
  s.bits = (h.x >> 16) | (h.y << 16);
  return s;
}
// q - 16: the 5-bit field with its top bit flipped, signed.
vec4 raw4_Q5_0(QStep s, uint word, uint hi_word, uint q) { return q_fields(q5_quad(word, s.bits, q) ^ 0x10101010u, 0u, 5); }
QStep step_Q5_1(uint i, uvec4 h) {
  QStep s = q_whole(VKGMM_DT_Q5_1, i);
  s.scale.x = q_half_lo(h.x);
  s.mins.x = -q_half_hi(h.x);
  s.bits = h.y;
  return s;
}
vec4 raw4_Q5_1(QStep s, uint word, uint hi_word, uint q) { return q_ufields(q5_quad(word, s.bits, q), 0u, 5); }

// iq4_nl {fp16 d; uint8 q[16]}: nibbles as q4_0, d * kvalues_iq4nl[q]. The 16 levels (-127 .. 113) are the
// bytes of four constant words, picked by selects and a shift: a CPU driver turns an indexed table into
// a gather per value.
float q_iq4nl(uint n) {
  uint w = n < 8u ? (n < 4u ? 0xBFAD9881u : 0xF6EADDCFu) : (n < 12u ? 0x26190D01u : 0x71594535u);
  return float(bitfieldExtract(int(w), int((n & 3u) * 8u), 8));
}
QStep step_IQ4_NL(uint i, uvec4 h) {
  QStep s = q_whole(VKGMM_DT_IQ4_NL, i);
  s.scale.x = q_half_lo(h.x);
  return s;
}
vec4 raw4_IQ4_NL(QStep s, uint word, uint hi_word, uint q) {
  uint u = q_nibbles(word, q >= 4u);
  return vec4(q_iq4nl(u & 15u), q_iq4nl((u >> 8) & 15u), q_iq4nl((u >> 16) & 15u), q_iq4nl(u >> 24));
}

// mxfp4 {uint8 e; uint8 q[16]}: nibbles as q4_0, e2m1 values (doubled) times the E8M0 scale (halved).
QStep step_MXFP4(uint i, uvec4 h) {
  QStep s = q_whole(VKGMM_DT_MXFP4, i);
  s.scale.x = q_e8m0_half(h.x & 0xffu);
  return s;
}
vec4 raw4_MXFP4(QStep s, uint word, uint hi_word, uint q) {
  uint u = q_nibbles(word, q >= 4u);
  return vec4(q_e2m1x2(u & 15u), q_e2m1x2((u >> 8) & 15u), q_e2m1x2((u >> 16) & 15u), q_e2m1x2(u >> 24));
}

// q4_K: {fp16 d, dmin; uint8 scales[12]; uint8 q[128]}, 144 bytes; value = d * scale * q - dmin * min. Its
// lead (d, dmin, scales) is the super-block's first texel: step i (a multiple of 64) is chunk c's quant
// bytes and the scales and mins of sub-blocks 2c and 2c + 1.
QStep step_Q4_K(uint i, uvec4 head) {
  uint c = (i >> 6) & 3u;
  uvec2 lo = q4k_scale_min(head.yzw, 2u * c), hi = q4k_scale_min(head.yzw, 2u * c + 1u);
  vec2 dm = unpackHalf2x16(head.x);
  return QStep((i >> 8) * q_block_bytes(VKGMM_DT_Q4_K) + 16u + c * 32u, 0u, 0u, 0u, dm.x * vec2(lo.x, hi.x),
               dm.y * vec2(lo.y, hi.y), 0u);
}
vec4 raw4_Q4_K(QStep s, uint word, uint hi_word, uint q) { return q_ufields(word, q >= 8u ? 4u : 0u, 4); }

// q6_K: {uint8 ql[128], qh[64]; int8 scales[16]; fp16 d}. Halves h of 128 values; quarter qq of a half
// takes ql's low (qq < 2) or high nibbles of bytes l (+ 32 for odd qq) and qh's bits 2qq, 2qq + 1 of byte l
// as bits 4, 5; value = d * scale[8h + l / 16 + 2qq] * (q - 32). Its scales are read here (no lead).
QStep step_Q6_K(uint i, uvec4 head) {
  uint base = (i >> 8) * q_block_bytes(VKGMM_DT_Q6_K), h = (i >> 7) & 1u, qq = (i >> 5) & 3u;
  // The step's two scale bytes share one word (they start at an even byte): one read for both.
  uint sc = base + 192u + h * 8u + 2u * qq;
  int both = int(q_word(sc >> 2) >> ((sc & 2u) * 8u));
  vec2 scale = q_half(base + 208u) * vec2(bitfieldExtract(both, 0, 8), bitfieldExtract(both, 8, 8));
  return QStep(base + h * 64u + (qq & 1u) * 32u, base + 128u + h * 32u, qq >= 2u ? 4u : 0u, 2u * qq, scale, vec2(0.0), 0u);
}
// q - 32 likewise: the 6-bit field with its top bit flipped, signed.
vec4 raw4_Q6_K(QStep s, uint word, uint hi_word, uint q) {
  uint top = (hi_word >> s.hi_shift) & 0x03030303u;
  return q_fields((((word >> s.shift) & 0x0f0f0f0fu) | (top << 4)) ^ 0x20202020u, 0u, 6);
}

// ---- The table's dispatch: each row's step_NAME and raw4_NAME, by the type (a constant in every caller) --
#define VKGMM_Q_STEP_OF(NAME, step, head, run_quads, run_words, mins, high, lead) \
  if (type == VKGMM_DT_##NAME) return step_##NAME(i, h);
#define VKGMM_Q_RAW4_OF(NAME, step, head, run_quads, run_words, mins, high, lead) \
  if (type == VKGMM_DT_##NAME) return raw4_##NAME(s, word, hi_word, q);
QStep q_step_at(uint type, uint i, uvec4 h) {
  VKGMM_BLOCK_FORMATS(VKGMM_Q_STEP_OF)
  return QStep(0u, 0u, 0u, 0u, vec2(0.0), vec2(0.0), 0u);
}
vec4 q_raw4(uint type, QStep s, uint word, uint hi_word, uint q) {
  VKGMM_BLOCK_FORMATS(VKGMM_Q_RAW4_OF)
  return vec4(0.0);
}

// q4_K's lead, the super-block's first texel: 144 bytes are 9 whole texels, and rhs starts at a texel
// (texel_views.cpp), so the word index is rounded down to a texel to say so to the compiler (q_word_run
// then places no words by runtime selects). A format with a lead has super-blocks of whole texels.
uvec4 q_lead_at(uint type, uint i) {
  uint r[9];
  q_word_run(((i / q_block_values(type)) * (q_block_bytes(type) / 4u)) & ~3u, 4u, r);
  return uvec4(r[0], r[1], r[2], r[3]);
}
// A whole block's head, its first 8 bytes (a head of at most 2 bytes lies in one word: such blocks start
// at an even byte, mxfp4's 1 byte anywhere), from byte base on.
uvec4 q_head_at(uint type, uint base) {
  uint x = q_head(type) <= 2u ? q_word(base >> 2) >> ((base & 3u) * 8u) : q_bytes4(base);
  return uvec4(x, q_head(type) > 4u ? q_bytes4(base + 4u) : 0u, 0u, 0u);
}
// The step at i on its own (dequant4): the head or lead it needs read here.
QStep q_step_read(uint type, uint i) {
  uvec4 h = q_whole_block(type) ? q_head_at(type, (i >> 5) * q_block_bytes(type))
            : q_has_lead(type)  ? q_lead_at(type, i)
                                : uvec4(0u);
  return q_step_at(type, i, h);
}

float q_run_scale(uint type, QStep s, uint q) { return q >= q_run_quads(type) ? s.scale.y : s.scale.x; }
float q_run_min(uint type, QStep s, uint q) { return q >= q_run_quads(type) ? s.mins.y : s.mins.x; }

// Whether the walk scales each value as it decodes it rather than each run's sum (gmm.comp): q4_K with 16
// rows per invocation.
bool q_values_scaled(uint type, uint rows) { return type == VKGMM_DT_Q4_K && rows >= 16u; }

// Values 4q .. 4q + 3 of step s, scaled.
vec4 q_step4(uint type, QStep s, uint word, uint hi_word, uint q) {
  return fma(vec4(q_run_scale(type, s, q)), q_raw4(type, s, word, hi_word, q), vec4(-q_run_min(type, s, q)));
}

// The most words a whole block spans: blocks of a multiple of 4 bytes start at a word, of an even size at
// an even byte, else anywhere.
uint q_block_words(uint type) {
  uint b = q_block_bytes(type);
  return (b + ((b & 3u) == 0u ? 0u : (b & 1u) == 0u ? 2u : 3u) + 3u) / 4u;
}

// The block walk's read of step i (a multiple of q_step_values): the step's scales and quant words (run
// and, q6_K, qh), each texel fetched once. A whole block is read in one run from the word holding its
// first byte (the head comes with the quants: q4_0 and mxfp4 2 texels, q8_0 3). A format with a lead
// (q4_K) takes it from the caller (q_lead_at, read once per super-block: 1 texel per 256 values) and its
// step's 32 quant bytes are two aligned texels (2 per 64 values).
void q_step_walk(uint type, uint i, uvec4 lead, out QStep s, out uint w[8], out uint hi[8]) {
  [[unroll]] for (uint j = 0u; j < 8u; ++j) hi[j] = 0u;
  if (q_whole_block(type)) {
    uint base = (i >> 5) * q_block_bytes(type), r[9];
    q_word_run(base >> 2, q_block_words(type), r);
    uint hw[8];
    q_words_in(r, base & 3u, 2u, hw);
    s = q_step_at(type, i, uvec4(hw[0], hw[1], 0u, 0u));
    // The quants from byte b of the run on: b < 12 (a head of at most 8 bytes), so whole words are
    // dropped by selects over constant indices (an indexed copy would put r in memory).
    uint b = (base & 3u) + q_head(type), drop = b >> 2, r1[9];
    [[unroll]] for (uint j = 0u; j < 9u; ++j)
      r1[j] = drop == 0u ? r[j] : drop == 1u ? (j < 8u ? r[j + 1u] : 0u) : (j < 7u ? r[j + 2u] : 0u);
    q_words_in(r1, b & 3u, q_run_words(type), w);
  } else if (q_has_lead(type)) {
    s = q_step_at(type, i, lead);
    uint r[9];
    q_word_run((s.run >> 2) & ~3u, 8u, r);
    q_words_in(r, 0u, 8u, w);
  } else {
    s = q_step_at(type, i, uvec4(0u));
    q_words(s.run, 8u, w);
    if (q_has_high(type)) q_words(s.hi_run, 8u, hi);
  }
}

// Values i .. i+3 (i a multiple of 4) on their own: the step's scales and the one or two words they need.
vec4 dequant4(uint type, uint i) {
  uint n = q_step_values(type);
  QStep s = q_step_read(type, i - i % n);
  uint q = (i % n) >> 2;
  uint word = q_bytes4(s.run + 4u * (q % q_run_words(type)));
  return q_step4(type, s, word, q_has_high(type) ? q_bytes4(s.hi_run + 4u * q) : 0u, q);
}
