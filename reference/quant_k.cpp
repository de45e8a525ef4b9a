// The 256-value super-block formats (reference/quant.cpp lays out their bytes): q4_K, q5_K and q6_K.
#include <cstring>

#include "quant_codec.hpp"

namespace vkgmm::quant::codec {
namespace {

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

// One sub-block's affine fit x ~ a * L - m with L in [0, top] (q4_K 15, q5_K 31), a >= 0, m >= 0 (the
// offset only ever lowers the values, so the fit includes 0 in its range): from the plain range split
// (lo = min(0, min x) to max x in top steps), levels rounded for 21 slightly wider and narrower step
// counts, each refitted by least squares; the smallest squared error wins.
struct Affine {
  double scale = 0, min = 0;
};

Affine fit_affine_sub(const float* x, int top) {
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
  double a = (hi - lo) / top, b = lo;
  for (int i = 0; i < n; ++i) L[i] = nearest((x[i] - lo) / a, 0, top);
  Affine best{a, -b};
  double best_sse = sse_of(a, b, L);
  for (int step = -10; step <= 10; ++step) {
    const double inv = (top + 0.1 * step) / (hi - lo);
    double sl = 0, sll = 0, sx = 0, sxl = 0;
    for (int i = 0; i < n; ++i) {
      L[i] = nearest((x[i] - lo) * inv, 0, top);
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

// The level (0 .. top) of value v in a sub-block of scale dj and min mj (as the reader computes them).
int affine_level(float v, float dj, float mj, int top) { return dj > 0 ? nearest((double(v) + mj) / dj, 0, top) : 0; }

double affine_sub_error(const float* x, float d, int sc, float dmin, int m, int top) {
  const float dj = d * static_cast<float>(sc), mj = dmin * static_cast<float>(m);
  double s = 0;
  for (int i = 0; i < 32; ++i) {
    const double diff = double(dj * static_cast<float>(affine_level(x[i], dj, mj, top)) - mj) - x[i];
    s += diff * diff;
  }
  return s;
}

// q4_K's and q5_K's head: per 32 values a fitted (scale, min) pair, as 6-bit codes against fp16
// super-block scales d and dmin, written at b (d, dmin, the 12 packed bytes); each value's level
// (0 .. top) against the final codes into q.
void quant_affine_K(const float* x, int top, uint8_t* b, int* q) {
  Affine sub[8];
  double max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    sub[j] = fit_affine_sub(x + 32 * j, top);
    max_scale = std::max(max_scale, sub[j].scale);
    max_min = std::max(max_min, sub[j].min);
  }
  const uint16_t dh = finite_half(static_cast<float>(max_scale / 63));
  const uint16_t dminh = finite_half(static_cast<float>(max_min / 63));
  put_half(b, dh);
  put_half(b + 2, dminh);
  const float d = f16_to_f32(dh), dmin = f16_to_f32(dminh);
  uint8_t* scales = b + 4;
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = d > 0 ? nearest(sub[j].scale / d, 0, 63) : 0;
    m[j] = dmin > 0 ? nearest(sub[j].min / dmin, 0, 63) : 0;
    // The codes next to the nearest ones can fit better once the values are rounded against them: the
    // best of the 3 x 3 neighbourhood by squared error.
    const int sc0 = sc[j], m0 = m[j];
    double best = affine_sub_error(x + 32 * j, d, sc0, dmin, m0, top);
    for (int a = std::max(0, sc0 - 1); a <= std::min(63, sc0 + 1); ++a)
      for (int c = std::max(0, m0 - 1); c <= std::min(63, m0 + 1); ++c) {
        const double e = affine_sub_error(x + 32 * j, d, a, dmin, c, top);
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
  for (int j = 0; j < 8; ++j) {
    const float dj = d * static_cast<float>(sc[j]), mj = dmin * static_cast<float>(m[j]);
    for (int i = 32 * j; i < 32 * j + 32; ++i) q[i] = affine_level(x[i], dj, mj, top);
  }
}

}  // namespace

// q4_K's and q5_K's values: d * sc_j * q_i - dmin * m_j, q_i the nibble of qs (chunk c = i / 64's 32 bytes,
// the low nibbles the first 32 values) plus, with qh, 16 where bit 2c (r < 32) or 2c + 1 of qh[r % 32].
static void dequant_affine_K(const uint8_t* b, const uint8_t* qh, const uint8_t* qs, float* y) {
  const float d = half_at(b), dmin = half_at(b + 2);
  for (int j = 0; j < 8; ++j) {
    int sc = 0, m = 0;
    scale_min(j, b + 4, sc, m);
    const float dj = d * static_cast<float>(sc), mj = dmin * static_cast<float>(m);
    for (int i = 32 * j; i < 32 * j + 32; ++i) {
      const int c = i / 64, r = i % 64;
      const int low = r < 32 ? qs[32 * c + r] & 0xF : qs[32 * c + r - 32] >> 4;
      const int high = qh ? (qh[r % 32] >> (2 * c + (r < 32 ? 0 : 1))) & 1 : 0;
      y[i] = dj * static_cast<float>(low | (high << 4)) - mj;
    }
  }
}

void dequant_q4_K(const uint8_t* b, float* y) { dequant_affine_K(b, nullptr, b + 16, y); }

void dequant_q5_K(const uint8_t* b, float* y) { dequant_affine_K(b, b + 16, b + 48, y); }

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

void quant_q4_K(const float* x, uint8_t* b) {
  std::memset(b, 0, 144);
  int q[kQK_K];
  quant_affine_K(x, 15, b, q);
  // Value i's nibble: chunk c = i / 64's 32 bytes, the low nibbles the first 32 values.
  uint8_t* qs = b + 16;
  for (int i = 0; i < kQK_K; ++i) {
    const int c = i / 64, r = i % 64;
    qs[32 * c + r % 32] |= static_cast<uint8_t>(r < 32 ? q[i] : q[i] << 4);
  }
}

// q5_K as q4_K with 32 levels: the nibbles likewise, and value i's fifth bit at bit 2c (r < 32) or
// 2c + 1 of qh[r % 32].
void quant_q5_K(const float* x, uint8_t* b) {
  std::memset(b, 0, 176);
  int q[kQK_K];
  quant_affine_K(x, 31, b, q);
  uint8_t* qh = b + 16;
  uint8_t* qs = b + 48;
  for (int i = 0; i < kQK_K; ++i) {
    const int c = i / 64, r = i % 64;
    qs[32 * c + r % 32] |= static_cast<uint8_t>(r < 32 ? (q[i] & 0xF) : (q[i] & 0xF) << 4);
    qh[r % 32] |= static_cast<uint8_t>((q[i] >> 4) << (2 * c + (r < 32 ? 0 : 1)));
  }
}

namespace {

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

}  // namespace

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


}  // namespace vkgmm::quant::codec
