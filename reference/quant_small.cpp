// The 32-value block formats with fp16 scales (reference/quant.cpp lays out their bytes): q8_0, q4_0,
// q4_1, q5_0, q5_1 and iq4_nl, and iq4_xs (256-value super-blocks of iq4_nl's levels). Each quantizer takes ggml's scale (and min) as ggml's reference
// quantizer computes it, stored as fp16, and then puts each value at the level nearest it on the grid
// the stored fields decode to; ggml rounds against the unrounded fields, which decode to the same grid,
// so every value is at least as close as ggml's (iq4_nl: below).
#include <cstring>

#include "quant_codec.hpp"

namespace vkgmm::quant::codec {
namespace {

// The signed extreme of x (the first value of largest magnitude), as ggml's q4_0, q5_0 and iq4_nl take it.
float signed_extreme(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kQK; ++j)
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  return max;
}

// Packs 32 codes of up to 5 bits as the q4/q5 formats do: code j's low nibble at nibble j (qs), its
// fifth bit at bit j of the 32-bit qh (when given).
void pack_codes(const int* q, uint8_t* qs, uint8_t* qh) {
  std::memset(qs, 0, 16);
  uint32_t high = 0;
  for (int j = 0; j < kQK; ++j) {
    qs[j % 16] |= static_cast<uint8_t>(j < 16 ? (q[j] & 0xF) : (q[j] & 0xF) << 4);
    high |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  }
  if (qh)
    for (int i = 0; i < 4; ++i) qh[i] = static_cast<uint8_t>(high >> (8 * i));
}

// Value j's 5-bit code of a q5 block: nibble j of qs, bit j of qh.
int code5(const uint8_t* qh, const uint8_t* qs, int j) {
  const uint32_t high = uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
  return nibble32(qs, j) | static_cast<int>(((high >> j) & 1u) << 4);
}

// The affine formats (q4_1, q5_1: y = d * q + m, q in [0, levels - 1]): ggml's d = (max - min) / (levels
// - 1) and m = min, stored as fp16, and each code the nearest level of the stored pair.
void quant_affine(const float* x, int levels, uint8_t* b, int* q) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < kQK; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  const uint16_t dh = scale_half((hi - lo) / static_cast<float>(levels - 1)), mh = finite_half(lo);
  put_half(b, dh);
  put_half(b + 2, mh);
  const double d = f16_to_f32(dh), m = f16_to_f32(mh);
  for (int j = 0; j < kQK; ++j) q[j] = d > 0 ? nearest((x[j] - m) / d, 0, levels - 1) : 0;
}

// iq4_nl's 16 levels (ggml's kvalues_iq4nl), ascending.
constexpr int8_t kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// The code of the level nearest v at scale d (the first of equals).
int nearest_iq4nl(double v, double d) {
  int best = 0;
  double best_err = std::fabs(kIq4nl[0] * d - v);
  for (int i = 1; i < 16; ++i) {
    const double err = std::fabs(kIq4nl[i] * d - v);
    if (err < best_err) best = i, best_err = err;
  }
  return best;
}

double iq4nl_error(const float* x, double d) {
  double sse = 0;
  for (int j = 0; j < kQK; ++j) {
    const double diff = double(static_cast<float>(kIq4nl[nearest_iq4nl(x[j], d)]) * static_cast<float>(d)) - x[j];
    sse += diff * diff;
  }
  return sse;
}

}  // namespace

void dequant_q8_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

void dequant_q4_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(nibble32(b + 2, j) - 8) * d;
}

void dequant_q4_1(const uint8_t* b, float* y) {
  const float d = half_at(b), m = half_at(b + 2);
  for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(nibble32(b + 4, j)) * d + m;
}

void dequant_q5_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(code5(b + 2, b + 6, j) - 16) * d;
}

void dequant_q5_1(const uint8_t* b, float* y) {
  const float d = half_at(b), m = half_at(b + 2);
  for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(code5(b + 4, b + 8, j)) * d + m;
}

void dequant_iq4_nl(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < kQK; ++j) y[j] = d * static_cast<float>(kIq4nl[nibble32(b + 2, j)]);
}

// ggml's scale (amax / 127), stored as fp16, and each value the nearest multiple q * d of the stored d
// with q in [-128, 127]: ggml rounds x / d against the unrounded d, one of these levels, so each of our
// values is at least as close.
void quant_q8_0(const float* x, uint8_t* b) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const uint16_t dh = scale_half(amax / 127.0f);
  put_half(b, dh);
  const double d = f16_to_f32(dh);
  for (int j = 0; j < kQK; ++j) {
    const int q = d > 0 ? nearest(x[j] / d, -128, 127) : 0;
    b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(q));
  }
}

// ggml's scale: the value of largest magnitude (the first such) maps to level -8, d = max / -8 (so d may
// be negative), stored as fp16; each value then the nearest level (q - 8) * d, q in [0, 15].
void quant_q4_0(const float* x, uint8_t* b) {
  const float max = signed_extreme(x);
  const uint16_t dh = max != 0 ? scale_half(max / -8.0f) : 0;
  put_half(b, dh);
  const double d = f16_to_f32(dh);
  std::memset(b + 2, 0, 16);
  for (int j = 0; j < kQK; ++j) {
    const int q = d != 0 ? nearest(x[j] / d, -8, 7) + 8 : 8;
    b[2 + (j % 16)] |= static_cast<uint8_t>(j < 16 ? q : q << 4);
  }
}

// q5_0 as q4_0 with 32 levels: the signed extreme at level -16, d = max / -16.
void quant_q5_0(const float* x, uint8_t* b) {
  const float max = signed_extreme(x);
  const uint16_t dh = max != 0 ? scale_half(max / -16.0f) : 0;
  put_half(b, dh);
  const double d = f16_to_f32(dh);
  int q[kQK];
  for (int j = 0; j < kQK; ++j) q[j] = d != 0 ? nearest(x[j] / d, -16, 15) + 16 : 16;
  pack_codes(q, b + 6, b + 2);
}

void quant_q4_1(const float* x, uint8_t* b) {
  int q[kQK];
  quant_affine(x, 16, b, q);
  pack_codes(q, b + 4, nullptr);
}

void quant_q5_1(const float* x, uint8_t* b) {
  int q[kQK];
  quant_affine(x, 32, b, q);
  pack_codes(q, b + 8, b + 4);
}

// iq4_nl has no round-to-nearest reference (ggml's searches scales): here the block's signed extreme at
// level -127 (d0 = max / -127, every value within 14 |d0| of a level: the levels reach from -127 d0 to
// 113 d0 and are at most 24 d0 apart), and 15 least-squares scales around it, fitted to the levels the
// values round to at max / (-127 + t), t = -7 .. 7; each stored as fp16 and each value put at its nearest
// level; the smallest squared error wins, so a block's error is at most d0's: 32 (14 d0)^2.
namespace {

// That search's fp16 scale for the 32 values x (0 for a block of zeros).
uint16_t iq4nl_scale(const float* x) {
  const float max = signed_extreme(x);
  if (max == 0) return 0;
  uint16_t best = scale_half(max / -127.0f);
  double best_sse = iq4nl_error(x, f16_to_f32(best));
  for (int t = -7; t <= 7; ++t) {
    const double step = max / (-127.0 + t);
    double sxl = 0, sll = 0;
    for (int j = 0; j < kQK; ++j) {
      const double l = kIq4nl[nearest_iq4nl(x[j], step)];
      sxl += x[j] * l;
      sll += l * l;
    }
    if (sll <= 0) continue;
    const uint16_t h = scale_half(static_cast<float>(sxl / sll));
    const double sse = iq4nl_error(x, f16_to_f32(h));
    if (sse < best_sse) best = h, best_sse = sse;
  }
  // iq4_nl has no level at 0: a block far below the smallest fp16 step is nearer to zeros.
  if (iq4nl_error(x, 0.0) < best_sse) best = 0;
  return best;
}

// The 32 values x at their nearest levels of scale d, packed as iq4_nl's qs (16 bytes).
void pack_iq4nl(const float* x, double d, uint8_t* qs) {
  int q[kQK];
  for (int j = 0; j < kQK; ++j) q[j] = nearest_iq4nl(x[j], d);
  pack_codes(q, qs, nullptr);
}

}  // namespace

void quant_iq4_nl(const float* x, uint8_t* b) {
  std::memset(b, 0, 18);
  const uint16_t d = iq4nl_scale(x);
  put_half(b, d);
  pack_iq4nl(x, f16_to_f32(d), b + 2);
}

// iq4_xs (ggml's block_iq4_xs, 136 bytes): half d; uint16 scales_h; uint8 scales_l[4]; uint8 qs[128]. Its
// 32-value sub-block ib has the 6-bit scale ls = (nibble ib % 2 of scales_l[ib / 2]) | (bits 2 ib, 2 ib + 1
// of scales_h) << 4 and iq4_nl's packing of its 16 bytes qs[16 ib ..]: y = (d * (ls - 32)) * kv[nibble], each
// product exact in fp32 (17 then 24 significant bits).
void dequant_iq4_xs(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const int scales_h = b[2] | (b[3] << 8);
  for (int ib = 0; ib < kQK_K / kQK; ++ib) {
    const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | (((scales_h >> (2 * ib)) & 3) << 4);
    const float dl = d * static_cast<float>(ls - 32);
    for (int j = 0; j < kQK; ++j) y[kQK * ib + j] = dl * static_cast<float>(kIq4nl[nibble32(b + 8 + 16 * ib, j)]);
  }
}

// iq4_xs: each sub-block's scale found as iq4_nl's; d the largest in magnitude over -32 (fp16), so that one
// is -32 d and every other lies in [-32 d, 32 d]; each ls - 32 the nearest in [-32, 31] of scale / d; each
// value at its nearest level of its sub-block's stored scale d * (ls - 32).
void quant_iq4_xs(const float* x, uint8_t* b) {
  std::memset(b, 0, 136);
  float scales[kQK_K / kQK], max = 0;
  for (int ib = 0; ib < kQK_K / kQK; ++ib) {
    scales[ib] = f16_to_f32(iq4nl_scale(x + kQK * ib));
    if (std::fabs(scales[ib]) > std::fabs(max)) max = scales[ib];
  }
  if (max == 0) return;
  const uint16_t dh = scale_half(max / -32.0f);
  put_half(b, dh);
  const double d = f16_to_f32(dh);
  int scales_h = 0;
  for (int ib = 0; ib < kQK_K / kQK; ++ib) {
    const int l = d == 0 ? 0 : nearest(scales[ib] / d, -32, 31);
    const int ls = l + 32;
    b[4 + ib / 2] = static_cast<uint8_t>(b[4 + ib / 2] | ((ls & 0xF) << (4 * (ib % 2))));
    scales_h |= (ls >> 4) << (2 * ib);
    pack_iq4nl(x + kQK * ib, static_cast<float>(d) * static_cast<float>(l), b + 8 + 16 * ib);
  }
  b[2] = static_cast<uint8_t>(scales_h & 0xFF);
  b[3] = static_cast<uint8_t>(scales_h >> 8);
}

}  // namespace vkgmm::quant::codec
