// The block formats' codecs (reference/quant.cpp's table): each format's dequantizer and quantizer of one
// block, and what they share. Internal to vkgmm_reference.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "vkgmm/convert.hpp"

namespace vkgmm::quant::codec {

constexpr int kQK = 32;     // values per block of the 32-value formats
constexpr int kQK_K = 256;  // values per super-block of the K formats and iq4_xs

inline float half_at(const uint8_t* p) { return f16_to_f32(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

inline void put_half(uint8_t* p, uint16_t h) {
  p[0] = static_cast<uint8_t>(h & 0xFF);
  p[1] = static_cast<uint8_t>(h >> 8);
}

// The fp16 nearest x, but never infinite: a scale past the f16 range saturates at +-65504, which keeps
// every value of the block finite (ggml would store infinity there).
inline uint16_t finite_half(float x) {
  uint16_t h = f32_to_f16(x);
  if ((h & 0x7FFFu) == 0x7C00u) h = static_cast<uint16_t>((h & 0x8000u) | 0x7BFFu);
  return h;
}

// A block's scale as fp16: finite_half, and never 0 for a nonzero scale (one that rounds to 0 becomes the
// smallest subnormal of its sign, 2^-24), so that the codes still reach a block of tiny values, each then
// at its nearest level, which a zero scale would make 0 (and 0 is one of the levels: never further).
inline uint16_t scale_half(float x) {
  uint16_t h = finite_half(x);
  if (x != 0 && (h & 0x7FFFu) == 0) h = static_cast<uint16_t>((h & 0x8000u) | 1u);
  return h;
}

// The integer nearest v, clamped to [lo, hi] (v finite). Ties may go either way: both are equally near.
inline int nearest(double v, int lo, int hi) { return static_cast<int>(std::clamp(std::round(v), double(lo), double(hi))); }

// The nibble of value j (0..31) of a 32-value block packed as q4_0 and mxfp4 pack it.
inline int nibble32(const uint8_t* qs, int j) { return j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4; }


// One block of a format: its values from its bytes, and its bytes from values.
using DequantFn = void (*)(const uint8_t*, float*);
using QuantFn = void (*)(const float*, uint8_t*);

// quant_small.cpp: the 32-value formats.
void dequant_q8_0(const uint8_t* b, float* y);
void quant_q8_0(const float* x, uint8_t* b);
void dequant_q4_0(const uint8_t* b, float* y);
void quant_q4_0(const float* x, uint8_t* b);
void dequant_q4_1(const uint8_t* b, float* y);
void quant_q4_1(const float* x, uint8_t* b);
void dequant_q5_0(const uint8_t* b, float* y);
void quant_q5_0(const float* x, uint8_t* b);
void dequant_q5_1(const uint8_t* b, float* y);
void quant_q5_1(const float* x, uint8_t* b);
void dequant_iq4_nl(const uint8_t* b, float* y);
void quant_iq4_nl(const float* x, uint8_t* b);
void dequant_iq4_xs(const uint8_t* b, float* y);  // 256-value super-blocks of iq4_nl's levels
void quant_iq4_xs(const float* x, uint8_t* b);
// quant_mxfp4.cpp.
void dequant_mxfp4(const uint8_t* b, float* y);
void quant_mxfp4(const float* x, uint8_t* b);
// quant_k.cpp: the 256-value super-blocks.
void dequant_q4_K(const uint8_t* b, float* y);
void quant_q4_K(const float* x, uint8_t* b);
void dequant_q5_K(const uint8_t* b, float* y);
void quant_q5_K(const float* x, uint8_t* b);
void dequant_q6_K(const uint8_t* b, float* y);
void quant_q6_K(const float* x, uint8_t* b);
void dequant_q2_K(const uint8_t* b, float* y);
void quant_q2_K(const float* x, uint8_t* b);
void dequant_q3_K(const uint8_t* b, float* y);
void quant_q3_K(const float* x, uint8_t* b);

}  // namespace vkgmm::quant::codec
