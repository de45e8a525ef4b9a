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
uint q_byte(uint b) { return (q_word(b >> 2) >> ((b & 3u) * 8u)) & 0xffu; }
// An fp16 at an even byte (never across words).
float q_half(uint b) {
  uint w = q_word(b >> 2);
  return unpackHalf2x16((b & 2u) != 0u ? w >> 16 : w).x;
}
vec4 q_unsigned(uint u) { return vec4(u & 0xffu, (u >> 8) & 0xffu, (u >> 16) & 0xffu, u >> 24); }
vec4 q_signed(uint u) {
  int v = int(u);
  return vec4(bitfieldExtract(v, 0, 8), bitfieldExtract(v, 8, 8), bitfieldExtract(v, 16, 8), bitfieldExtract(v, 24, 8));
}
// Nibbles of four bytes: the low ones (values j < B/2 of the 4-bit formats) or the high ones.
uint q_nibbles(uint u, bool high) { return (high ? u >> 4 : u) & 0x0f0f0f0fu; }

// mxfp4: the E8M0 scale halved (2^(e - 128)), for the e2m1 values doubled to integers below; e < 2
// gives the subnormals 2^-128 and 2^-127, as ggml's ggml_e8m0_to_fp32_half.
float q_e8m0_half(uint e) { return uintBitsToFloat(e < 2u ? (0x00200000u << e) : ((e - 1u) << 23)); }
const float Q_MXFP4_VALUES[16] = float[16](0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0,  //
                                           0.0, -1.0, -2.0, -3.0, -4.0, -6.0, -8.0, -12.0);

// q4_K: sub-block j's (0..7) 6-bit scale and min, packed in the 12 bytes at s: j < 4 in the low six
// bits of bytes j and j + 4; j >= 4 in byte j + 4's nibbles, topped by the high two bits of bytes
// j - 4 (scale) and j (min).
uvec2 q4k_scale_min(uint s, uint j) {
  if (j < 4u) return uvec2(q_byte(s + j) & 63u, q_byte(s + j + 4u) & 63u);
  uint both = q_byte(s + j + 4u);
  return uvec2((both & 15u) | ((q_byte(s + j - 4u) >> 6) << 4), (both >> 4) | ((q_byte(s + j) >> 6) << 4));
}

vec4 dequant4(uint type, uint i) {
  if (type == VKGMM_DT_Q8_0) {  // {fp16 d; int8 q[32]}: d * q
    uint base = (i >> 5) * 34u;
    return q_half(base) * q_signed(q_bytes4(base + 2u + (i & 31u)));
  }
  if (type == VKGMM_DT_Q4_0) {  // {fp16 d; uint8 q[16]}: value j is nibble j % 16 (low first), d * (q - 8)
    uint base = (i >> 5) * 18u, j = i & 31u;
    return q_half(base) * (q_unsigned(q_nibbles(q_bytes4(base + 2u + (j & 15u)), j >= 16u)) - 8.0);
  }
  if (type == VKGMM_DT_MXFP4) {  // {uint8 e; uint8 q[16]}: nibbles as q4_0, e2m1 values times the scale
    uint base = (i >> 5) * 17u, j = i & 31u;
    uint u = q_nibbles(q_bytes4(base + 1u + (j & 15u)), j >= 16u);
    vec4 v = vec4(Q_MXFP4_VALUES[u & 15u], Q_MXFP4_VALUES[(u >> 8) & 15u], Q_MXFP4_VALUES[(u >> 16) & 15u],
                  Q_MXFP4_VALUES[u >> 24]);
    return v * q_e8m0_half(q_byte(base));
  }
  if (type == VKGMM_DT_Q4_K) {
    // {fp16 d, dmin; uint8 scales[12]; uint8 q[128]}: 64-value chunks c of 32 bytes, the low nibbles
    // first (sub-block 2c), then the high ones (2c + 1); value = d * scale * q - dmin * min.
    uint base = (i >> 8) * 144u, r = i & 255u, c = r >> 6, high = (r >> 5) & 1u;
    uvec2 sm = q4k_scale_min(base + 4u, 2u * c + high);
    float d = q_half(base) * float(sm.x), m = q_half(base + 2u) * float(sm.y);
    return d * q_unsigned(q_nibbles(q_bytes4(base + 16u + c * 32u + (r & 31u)), high != 0u)) - m;
  }
  // q6_K: {uint8 ql[128], qh[64]; int8 scales[16]; fp16 d}. Halves h of 128 values; quarter qq of a half
  // takes ql's low (qq < 2) or high nibbles of bytes l (+ 32 for odd qq) and qh's bits 2qq, 2qq + 1 of
  // byte l as bits 4, 5; value = d * scale[8h + l / 16 + 2qq] * (q - 32).
  uint base = (i >> 8) * 210u, r = i & 255u, h = r >> 7, qq = (r >> 5) & 3u, l = r & 31u;
  uint low = q_nibbles(q_bytes4(base + h * 64u + (qq & 1u) * 32u + l), qq >= 2u);
  uint top = (q_bytes4(base + 128u + h * 32u + l) >> (2u * qq)) & 0x03030303u;
  float scale = float(bitfieldExtract(int(q_byte(base + 192u + h * 8u + (l >> 4) + 2u * qq)), 0, 8));
  return (q_half(base + 208u) * scale) * (q_unsigned(low | (top << 4)) - 32.0);
}
