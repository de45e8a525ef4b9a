// GGUF's block formats on the CPU (vkgmm/quant.hpp): dequantizers with exactly ggml's values, and
// quantizers at least as accurate as ggml's reference ones where that is asked (q8_0, q4_0, mxfp4).
//
// The blocks, byte for byte (ggml-common.h; all multi-byte fields little-endian; "half" is IEEE fp16):
//   q8_0  (32 values, 34 bytes):  half d; int8 qs[32].                    y[j] = d * qs[j]
//   q4_0  (32 values, 18 bytes):  half d; uint8 qs[16].                   y[j] = d * (nibble_j - 8), where
//         nibble_j is the low nibble of qs[j] for j < 16 and the high nibble of qs[j - 16] for j >= 16.
//   mxfp4 (32 values, 17 bytes):  uint8 e (E8M0); uint8 qs[16].           y[j] = kv[nibble_j] * 2^(e - 128)
//         with the nibbles as in q4_0 and kv = {0, 1, 2, 3, 4, 6, 8, 12, -0, -1, ..., -12}: twice the e2m1
//         values {0, 0.5, 1, 1.5, 2, 3, 4, 6}, so ggml folds the matching 1/2 into the scale: 2^(e - 127) / 2.
//         ggml reads every e as a number, 255 too (2^127), and e = 0 as 2^-128; so does vkgmm.
//   q4_K  (256 values, 144 bytes): half d, dmin; uint8 scales[12]; uint8 qs[128]. Sub-block j = i / 32
//         has a 6-bit scale sc_j and min m_j (the packing in scale_min below) and
//         y[i] = (d * sc_j) * q_i - (dmin * m_j); q_i is the low nibble of qs[32 c + r] for r < 32 and the
//         high nibble of qs[32 c + r - 32] for r >= 32, where c = i / 64, r = i % 64.
//   q6_K  (256 values, 210 bytes): uint8 ql[128]; uint8 qh[64]; int8 scales[16]; half d.
//         y[i] = d * scales[i / 16] * (q_i - 32), q_i six bits: for h = i / 128, t = (i % 128) / 32,
//         l = i % 32, its low four bits are ql[64 h + 32 (t % 2) + l], the low nibble for t < 2 and the high
//         one for t >= 2, and its top two bits are bits 2t, 2t + 1 of qh[32 h + l].
//
// Every product above is exact in fp32 (at most 24 significant bits: an 11-bit half times small integers,
// or a power of two times one), so the order of the multiplications and a fused multiply-add in q4_K's
// "- dmin * m" cannot change a value: these are ggml's values bit for bit.
#include "vkgmm/quant.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <string>

#include "vkgmm/convert.hpp"

namespace vkgmm::quant {
namespace {

constexpr int kQK = 32;    // values per block of q8_0, q4_0, mxfp4
constexpr int kQK_K = 256; // values per super-block of q4_K, q6_K

// Twice the e2m1 values, in code order (bit 3 the sign): ggml's kvalues_mxfp4.
constexpr int8_t kE2M1x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

float half_at(const uint8_t* p) { return f16_to_f32(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

void put_half(uint8_t* p, uint16_t h) {
  p[0] = static_cast<uint8_t>(h & 0xFF);
  p[1] = static_cast<uint8_t>(h >> 8);
}

// The fp16 nearest x, but never infinite: a scale past the f16 range saturates at +-65504, which keeps
// every value of the block finite (ggml would store infinity there).
uint16_t finite_half(float x) {
  uint16_t h = f32_to_f16(x);
  if ((h & 0x7FFFu) == 0x7C00u) h = static_cast<uint16_t>((h & 0x8000u) | 0x7BFFu);
  return h;
}

// ggml's E8M0 scale with the e2m1 table's factor 2 folded in: 2^(e - 127) / 2 (ggml_e8m0_to_fp32_half).
// For e = 0 and 1 it is an fp32 subnormal, exactly representable; e = 255 is 2^127, not NaN.
float e8m0_half(uint8_t e) { return std::ldexp(1.0f, static_cast<int>(e) - 128); }

// The 6-bit scale and min of q4_K's sub-block j (0..7) from the 12 bytes `s` (ggml's get_scale_min_k4):
// j < 4: sc = s[j] & 63, m = s[j + 4] & 63. j >= 4: the low four bits of sc and m are the low and high
// nibbles of s[j + 4]; their top two bits are the top two bits of s[j - 4] and s[j].
void scale_min(int j, const uint8_t* s, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// The nibble of value j (0..31) of a 32-value block packed as q4_0 and mxfp4 pack it.
int nibble32(const uint8_t* qs, int j) { return j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4; }

void dequant_q8_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

void dequant_q4_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(nibble32(b + 2, j) - 8) * d;
}

void dequant_mxfp4(const uint8_t* b, float* y) {
  const float d = e8m0_half(b[0]);
  for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(kE2M1x2[nibble32(b + 1, j)]) * d;
}

void dequant_q4_K(const uint8_t* b, float* y) {
  const float d = half_at(b), dmin = half_at(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qs = b + 16;
  for (int j = 0; j < 8; ++j) {
    int sc = 0, m = 0;
    scale_min(j, scales, sc, m);
    const float dj = d * static_cast<float>(sc), mj = dmin * static_cast<float>(m);
    for (int i = 32 * j; i < 32 * j + 32; ++i) {
      const int c = i / 64, r = i % 64;
      const int q = r < 32 ? qs[32 * c + r] & 0xF : qs[32 * c + r - 32] >> 4;
      y[i] = dj * static_cast<float>(q) - mj;
    }
  }
}

void dequant_q6_K(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half_at(b + 208);
  for (int i = 0; i < kQK_K; ++i) {
    const int h = i / 128, t = (i % 128) / 32, l = i % 32;
    const uint8_t low_byte = ql[64 * h + 32 * (t % 2) + l];
    const int low = t < 2 ? low_byte & 0xF : low_byte >> 4;
    const int high = (qh[32 * h + l] >> (2 * t)) & 3;
    const int q = (low | (high << 4)) - 32;
    y[i] = d * static_cast<float>(sc[i / 16]) * static_cast<float>(q);
  }
}

// The integer nearest v, clamped to [lo, hi] (v finite). Ties may go either way: both are equally near.
int nearest(double v, int lo, int hi) { return static_cast<int>(std::clamp(std::round(v), double(lo), double(hi))); }

// --- q8_0 and q4_0 -------------------------------------------------------------------------------------

// ggml's scale (amax / 127), stored as fp16, and each value the nearest multiple q * d of the stored d
// with q in [-128, 127]: ggml rounds x / d against the unrounded d, one of these levels, so each of our
// values is at least as close.
void quant_q8_0(const float* x, uint8_t* b) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const uint16_t dh = finite_half(amax / 127.0f);
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
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kQK; ++j)
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  const uint16_t dh = amax > 0 ? finite_half(max / -8.0f) : 0;
  put_half(b, dh);
  const double d = f16_to_f32(dh);
  std::memset(b + 2, 0, 16);
  for (int j = 0; j < kQK; ++j) {
    const int q = d != 0 ? nearest(x[j] / d, -8, 7) + 8 : 8;
    b[2 + (j % 16)] |= static_cast<uint8_t>(j < 16 ? q : q << 4);
  }
}

// --- mxfp4 ---------------------------------------------------------------------------------------------

// The code of the e2m1 level nearest x at scale d (first of equals: +0 before -0, as ggml's search).
int nearest_e2m1(float x, float d) {
  int best = 0;
  float best_err = std::fabs(static_cast<float>(kE2M1x2[0]) * d - x);
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs(static_cast<float>(kE2M1x2[i]) * d - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

double mxfp4_block_error(const float* x, uint8_t e) {
  const float d = e8m0_half(e);
  double sse = 0;
  for (int j = 0; j < kQK; ++j) {
    const double diff = double(kE2M1x2[nearest_e2m1(x[j], d)]) * d - x[j];
    sse += diff * diff;
  }
  return sse;
}

// The shared exponent: the OCP MX rule (floor(log2 amax) - 2: amax lands in [4, 8) units, the top e2m1
// level being 6), as exact integer arithmetic and as ggml computes it (floorf(log2f(amax)), which can be
// one higher just below a power of two), and one above, where clipping the largest values costs more than
// the coarser levels: whichever leaves the block the smallest squared error, the lowest of equals.
void quant_mxfp4(const float* x, uint8_t* b) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  std::memset(b, 0, 17);
  if (amax == 0.0f) return;  // e = 0, every code +0
  auto clamp_e = [](long v) { return static_cast<uint8_t>(std::clamp(v, 0L, 254L)); };
  const long exact = std::ilogb(amax) - 2 + 127;
  const long ggml = static_cast<long>(std::floor(std::log2(amax))) - 2 + 127;
  uint8_t candidates[] = {clamp_e(exact), clamp_e(exact + 1), clamp_e(ggml), clamp_e(ggml + 1)};
  std::sort(std::begin(candidates), std::end(candidates));
  uint8_t best = candidates[0];
  double best_sse = mxfp4_block_error(x, best);
  for (uint8_t e : candidates) {
    const double sse = mxfp4_block_error(x, e);
    if (sse < best_sse) {
      best = e;
      best_sse = sse;
    }
  }
  b[0] = best;
  const float d = e8m0_half(best);
  for (int j = 0; j < kQK; ++j) b[1 + (j % 16)] |= static_cast<uint8_t>(nearest_e2m1(x[j], d) << (j < 16 ? 0 : 4));
}

// --- q4_K ----------------------------------------------------------------------------------------------

// One sub-block's affine fit x ~ a * L - m with L in [0, 15], a >= 0, m >= 0 (the offset only ever
// lowers the values, so the fit includes 0 in its range): from the plain range split (lo = min(0, min x)
// to max x in 15 steps), levels rounded for 21 slightly wider and narrower step counts, each refitted
// by least squares; the smallest squared error wins.
struct Affine {
  double scale = 0, min = 0;
};

Affine fit_q4_K_sub(const float* x) {
  constexpr int n = 32;
  double lo = 0, hi = x[0];
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, double(x[i]));
    hi = std::max(hi, double(x[i]));
  }
  if (hi <= lo) return {0, -lo};  // all values equal lo (<= 0): min alone
  auto sse_of = [&](double a, double b, const int* L) {
    double s = 0;
    for (int i = 0; i < n; ++i) {
      const double diff = a * L[i] + b - x[i];
      s += diff * diff;
    }
    return s;
  };
  int L[n];
  double a = (hi - lo) / 15, b = lo;
  for (int i = 0; i < n; ++i) L[i] = nearest((x[i] - lo) / a, 0, 15);
  Affine best{a, -b};
  double best_sse = sse_of(a, b, L);
  for (int step = -10; step <= 10; ++step) {
    const double inv = (15 + 0.1 * step) / (hi - lo);
    double sl = 0, sll = 0, sx = 0, sxl = 0;
    for (int i = 0; i < n; ++i) {
      L[i] = nearest((x[i] - lo) * inv, 0, 15);
      sl += L[i];
      sll += double(L[i]) * L[i];
      sx += x[i];
      sxl += double(x[i]) * L[i];
    }
    const double det = n * sll - sl * sl;
    if (det <= 0) continue;
    double fa = (n * sxl - sx * sl) / det, fb = (sll * sx - sl * sxl) / det;
    if (fb > 0) {  // the offset may only lower: refit the scale alone through 0
      fb = 0;
      fa = sxl / sll;
    }
    if (!(fa > 0)) continue;
    const double sse = sse_of(fa, fb, L);
    if (sse < best_sse) {
      best_sse = sse;
      best = {fa, -fb};
    }
  }
  return best;
}

// The level of value v in a q4_K sub-block of scale dj and min mj (as the reader computes them).
int q4_K_level(float v, float dj, float mj) { return dj > 0 ? nearest((double(v) + mj) / dj, 0, 15) : 0; }

double q4_K_sub_error(const float* x, float d, int sc, float dmin, int m) {
  const float dj = d * static_cast<float>(sc), mj = dmin * static_cast<float>(m);
  double s = 0;
  for (int i = 0; i < 32; ++i) {
    const double diff = double(dj * static_cast<float>(q4_K_level(x[i], dj, mj)) - mj) - x[i];
    s += diff * diff;
  }
  return s;
}

void quant_q4_K(const float* x, uint8_t* b) {
  Affine sub[8];
  double max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    sub[j] = fit_q4_K_sub(x + 32 * j);
    max_scale = std::max(max_scale, sub[j].scale);
    max_min = std::max(max_min, sub[j].min);
  }
  const uint16_t dh = finite_half(static_cast<float>(max_scale / 63));
  const uint16_t dminh = finite_half(static_cast<float>(max_min / 63));
  std::memset(b, 0, 144);
  put_half(b, dh);
  put_half(b + 2, dminh);
  const float d = f16_to_f32(dh), dmin = f16_to_f32(dminh);
  uint8_t* scales = b + 4;
  uint8_t* qs = b + 16;
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = d > 0 ? nearest(sub[j].scale / d, 0, 63) : 0;
    m[j] = dmin > 0 ? nearest(sub[j].min / dmin, 0, 63) : 0;
    // The codes next to the nearest ones can fit better once the values are rounded against them: the
    // best of the 3 x 3 neighbourhood by squared error.
    const int sc0 = sc[j], m0 = m[j];
    double best = q4_K_sub_error(x + 32 * j, d, sc0, dmin, m0);
    for (int a = std::max(0, sc0 - 1); a <= std::min(63, sc0 + 1); ++a)
      for (int c = std::max(0, m0 - 1); c <= std::min(63, m0 + 1); ++c) {
        const double e = q4_K_sub_error(x + 32 * j, d, a, dmin, c);
        if (e < best) best = e, sc[j] = a, m[j] = c;
      }
  }
  // The packing scale_min reads: sub-blocks 0..3 in the low six bits of bytes 0..3 (scales) and 4..7
  // (mins); sub-block 4 + j's low four bits in byte 8 + j (scale low nibble, min high nibble) and its top
  // two bits in the top bits of byte j (scale) and byte 4 + j (min).
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    scales[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
  // Each value the nearest level of its sub-block's final (coded) scale and min, as the reader sees them.
  for (int j = 0; j < 8; ++j) {
    const float dj = d * static_cast<float>(sc[j]), mj = dmin * static_cast<float>(m[j]);
    for (int i = 32 * j; i < 32 * j + 32; ++i) {
      const int q = q4_K_level(x[i], dj, mj);
      const int c = i / 64, r = i % 64;
      qs[32 * c + r % 32] |= static_cast<uint8_t>(r < 32 ? q : q << 4);
    }
  }
}

// --- q6_K ----------------------------------------------------------------------------------------------

// One 16-value sub-block's scale a for x ~ a * L, L in [-32, 31]: the plain one (the value of largest
// magnitude at level -32, as q4_0 does at -8) and, for 20 step counts around 32, the least-squares scale
// of the levels they round to; the smallest squared error wins. Signed: a < 0 when that value is positive.
double fit_q6_K_sub(const float* x) {
  constexpr int n = 16;
  double amax = 0, max = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  if (amax == 0) return 0;
  auto sse_of = [&](double a) {
    double s = 0;
    for (int i = 0; i < n; ++i) {
      const double diff = a * nearest(x[i] / a, -32, 31) - x[i];
      s += diff * diff;
    }
    return s;
  };
  double best = max / -32;
  double best_sse = sse_of(best);
  for (int step = -10; step <= 10; ++step) {
    if (step == 0) continue;
    const double inv = -(32 + 0.1 * step) / max;
    double sxl = 0, sll = 0;
    for (int i = 0; i < n; ++i) {
      const int l = nearest(x[i] * inv, -32, 31);
      sxl += double(x[i]) * l;
      sll += double(l) * l;
    }
    if (sll <= 0 || sxl == 0) continue;
    const double a = sxl / sll;
    const double sse = sse_of(a);
    if (sse < best_sse) {
      best_sse = sse;
      best = a;
    }
  }
  return best;
}

// The level (-32 .. 31) of value v in a q6_K sub-block of scale dj.
int q6_K_level(float v, float dj) { return dj != 0 ? nearest(double(v) / dj, -32, 31) : 0; }

double q6_K_sub_error(const float* x, float d, int sc) {
  const float dj = d * static_cast<float>(sc);
  double s = 0;
  for (int i = 0; i < 16; ++i) {
    const double diff = double(dj * static_cast<float>(q6_K_level(x[i], dj))) - x[i];
    s += diff * diff;
  }
  return s;
}

void quant_q6_K(const float* x, uint8_t* b) {
  double scale[16], max_abs = 0;
  for (int j = 0; j < 16; ++j) {
    scale[j] = fit_q6_K_sub(x + 16 * j);
    max_abs = std::max(max_abs, std::fabs(scale[j]));
  }
  std::memset(b, 0, 210);
  const uint16_t dh = finite_half(static_cast<float>(max_abs / 127));
  put_half(b + 208, dh);
  const float d = f16_to_f32(dh);
  uint8_t* ql = b;
  uint8_t* qh = b + 128;
  int8_t sc[16];
  for (int j = 0; j < 16; ++j) {
    const int c0 = d > 0 ? nearest(scale[j] / d, -127, 127) : 0;
    // As in q4_K: the neighbouring codes too, by squared error once the values are rounded against them.
    int c = c0;
    double best = q6_K_sub_error(x + 16 * j, d, c0);
    for (int a = std::max(-127, c0 - 1); a <= std::min(127, c0 + 1); ++a) {
      const double e = q6_K_sub_error(x + 16 * j, d, a);
      if (e < best) best = e, c = a;
    }
    sc[j] = static_cast<int8_t>(c);
    b[192 + j] = static_cast<uint8_t>(sc[j]);
  }
  for (int i = 0; i < kQK_K; ++i) {
    const int q = q6_K_level(x[i], d * static_cast<float>(sc[i / 16])) + 32;  // 0 codes as 32
    const int h = i / 128, t = (i % 128) / 32, l = i % 32;
    ql[64 * h + 32 * (t % 2) + l] |= static_cast<uint8_t>(t < 2 ? (q & 0xF) : (q & 0xF) << 4);
    qh[32 * h + l] |= static_cast<uint8_t>((q >> 4) << (2 * t));
  }
}

using DequantFn = void (*)(const uint8_t*, float*);
using QuantFn = void (*)(const float*, uint8_t*);

struct Codec {
  DequantFn dequant;
  QuantFn quant;
};

Codec codec(DType t) {
  switch (t) {
    case DType::q8_0: return {dequant_q8_0, quant_q8_0};
    case DType::q4_0: return {dequant_q4_0, quant_q4_0};
    case DType::q4_K: return {dequant_q4_K, quant_q4_K};
    case DType::q6_K: return {dequant_q6_K, quant_q6_K};
    case DType::mxfp4: return {dequant_mxfp4, quant_mxfp4};
    default: break;
  }
  return {nullptr, nullptr};
}

}  // namespace

void dequantize(DType t, const uint8_t* blocks, uint64_t count, float* out) {
  const uint64_t bytes = storage_bytes(t, count);  // throws for an unknown type or a partial block
  if (!is_quantized(t)) {
    const std::vector<float> v = decode(t, blocks, static_cast<size_t>(count));
    std::copy(v.begin(), v.end(), out);
    return;
  }
  const Codec c = codec(t);
  const uint64_t per = block_elements(t), size = block_bytes(t);
  for (uint64_t i = 0; i < bytes / size; ++i) c.dequant(blocks + i * size, out + i * per);
}

std::vector<float> dequantize(DType t, const std::vector<uint8_t>& blocks, uint64_t count) {
  if (blocks.size() != storage_bytes(t, count))
    throw Error(Status::invalid_argument, std::to_string(blocks.size()) + " bytes are not " + std::to_string(count) +
                                              " values of " + dtype_name(t));
  std::vector<float> out(static_cast<size_t>(count));
  dequantize(t, blocks.data(), count, out.data());
  return out;
}

std::vector<uint8_t> quantize(DType t, const float* x, uint64_t count) {
  if (!is_quantized(t))
    throw Error(Status::invalid_argument, std::string("quantize: ") + dtype_name(t) + " is not a block format");
  const uint64_t bytes = storage_bytes(t, count);
  for (uint64_t i = 0; i < count; ++i)
    if (!std::isfinite(x[i]))
      throw Error(Status::invalid_argument,
                  "quantize: value " + std::to_string(i) + " is not finite (" + dtype_name(t) + " holds finite values only)");
  std::vector<uint8_t> out(static_cast<size_t>(bytes));
  const Codec c = codec(t);
  const uint64_t per = block_elements(t), size = block_bytes(t);
  for (uint64_t i = 0; i < bytes / size; ++i) c.quant(x + i * per, out.data() + i * size);
  return out;
}

std::vector<float> dequantize_experts(DType t, const uint8_t* data, int64_t experts, int64_t n, int64_t k) {
  if (experts < 0 || n < 0 || k < 0)
    throw Error(Status::invalid_argument, "dequantize_experts: negative size");
  if (static_cast<uint64_t>(k) % block_elements(t) != 0)
    throw Error(Status::invalid_argument, "k = " + std::to_string(k) + " is not a multiple of " + dtype_name(t) +
                                              "'s block of " + std::to_string(block_elements(t)) + " values");
  // Each of the experts * n rows is whole blocks, stored one after another: the tensor is one run of
  // blocks.
  const uint64_t count = static_cast<uint64_t>(experts) * static_cast<uint64_t>(n) * static_cast<uint64_t>(k);
  std::vector<float> out(static_cast<size_t>(count));
  dequantize(t, data, count, out.data());
  return out;
}

}  // namespace vkgmm::quant
