// The 256-value super-block formats with scales per sub-block (reference/quant.cpp lays out their bytes):
// the affine ones (q4_K, q5_K, q2_K) and the signed ones (q6_K, q3_K).
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

// One sub-block's affine fit x ~ a * L - m with L in [0, top] (q4_K 15, q5_K 31, q2_K 3), a >= 0, m >= 0 (the
// offset only ever lowers the values, so the fit includes 0 in its range): from the plain range split
// (lo = min(0, min x) to max x in top steps), levels rounded for 21 slightly wider and narrower step
// counts, each refitted by least squares; the smallest squared error wins.
struct Affine {
  double scale = 0, min = 0;
};

Affine fit_affine_sub(const float* x, int n, int top) {
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
  int L[32];
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

double affine_sub_error(const float* x, int n, float d, int sc, float dmin, int m, int top) {
  const float dj = d * static_cast<float>(sc), mj = dmin * static_cast<float>(m);
  double s = 0;
  for (int i = 0; i < n; ++i) {
    const double diff = double(dj * static_cast<float>(affine_level(x[i], dj, mj, top)) - mj) - x[i];
    s += diff * diff;
  }
  return s;
}

// Per sub-block of n values a fitted (scale, min) pair, as codes in [0, code_max] against the fp16
// super-block scales d and dmin; each value's level (0 .. top) against the final codes into q.
struct AffineCodes {
  uint16_t d = 0, dmin = 0;
  int sc[16] = {}, m[16] = {};
};

AffineCodes affine_codes(const float* x, int subs, int n, int top, int code_max, int* q) {
  Affine sub[16];
  double max_scale = 0, max_min = 0;
  for (int j = 0; j < subs; ++j) {
    sub[j] = fit_affine_sub(x + n * j, n, top);
    max_scale = std::max(max_scale, sub[j].scale);
    max_min = std::max(max_min, sub[j].min);
  }
  AffineCodes c;
  c.d = scale_half(static_cast<float>(max_scale / code_max));
  c.dmin = scale_half(static_cast<float>(max_min / code_max));
  const float d = f16_to_f32(c.d), dmin = f16_to_f32(c.dmin);
  for (int j = 0; j < subs; ++j) {
    const float* xj = x + n * j;
    int& sc = c.sc[j];
    int& m = c.m[j];
    sc = d > 0 ? nearest(sub[j].scale / d, 0, code_max) : 0;
    m = dmin > 0 ? nearest(sub[j].min / dmin, 0, code_max) : 0;
    // The codes next to the nearest ones can fit better once the values are rounded against them: the
    // best of the 3 x 3 neighbourhood by squared error, and of (0, 0), every value 0, so that a sub-block
    // is never further than zeros (a tiny one whose scale the super-block's d cannot step).
    const int sc0 = sc, m0 = m;
    double best = affine_sub_error(xj, n, d, sc0, dmin, m0, top);
    for (int a = std::max(0, sc0 - 1); a <= std::min(code_max, sc0 + 1); ++a)
      for (int e = std::max(0, m0 - 1); e <= std::min(code_max, m0 + 1); ++e) {
        const double err = affine_sub_error(xj, n, d, a, dmin, e, top);
        if (err < best) best = err, sc = a, m = e;
      }
    if (affine_sub_error(xj, n, d, 0, dmin, 0, top) < best) sc = 0, m = 0;
    const float dj = d * static_cast<float>(sc), mj = dmin * static_cast<float>(m);
    for (int i = 0; i < n; ++i) q[n * j + i] = affine_level(xj[i], dj, mj, top);
  }
  return c;
}

// q4_K's and q5_K's head: 8 sub-blocks of 32 values with 6-bit codes, written at b (d, dmin, the 12
// packed bytes).
void quant_affine_K(const float* x, int top, uint8_t* b, int* q) {
  const AffineCodes c = affine_codes(x, 8, 32, top, 63, q);
  put_half(b, c.d);
  put_half(b + 2, c.dmin);
  uint8_t* scales = b + 4;
  const int* sc = c.sc;
  const int* m = c.m;
  // The packing scale_min reads: sub-blocks 0..3 in the low six bits of bytes 0..3 (scales) and 4..7
  // (mins); sub-block 4 + j's low four bits in byte 8 + j (scale low nibble, min high nibble) and its top
  // two bits in the top bits of byte j (scale) and byte 4 + j (min).
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    scales[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
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

// --- q6_K, q3_K: signed levels, a signed scale per 16 values ------------------------------------------

// One 16-value sub-block's scale a for x ~ a * L, L in [lo, hi] (q6_K [-32, 31], q3_K [-4, 3]): the plain
// one (the value of largest magnitude at level lo, as q4_0 does at -8) and, for 20 step counts within 1
// of -lo, the least-squares scale of the levels they round to; the smallest squared error wins.
// Signed: a < 0 when that value is positive.
double fit_signed_sub(const float* x, int lo, int hi) {
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
      const double diff = a * nearest(x[i] / a, lo, hi) - x[i];
      s += diff * diff;
    }
    return s;
  };
  double best = max / lo;
  double best_sse = sse_of(best);
  for (int step = -10; step <= 10; ++step) {
    if (step == 0) continue;
    const double inv = (lo - 0.1 * step) / max;
    double sxl = 0, sll = 0;
    for (int i = 0; i < n; ++i) {
      const int l = nearest(x[i] * inv, lo, hi);
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

// The level (lo .. hi) of value v in a sub-block of scale dj.
int signed_level(float v, float dj, int lo, int hi) { return dj != 0 ? nearest(double(v) / dj, lo, hi) : 0; }

double signed_sub_error(const float* x, float d, int sc, int lo, int hi) {
  const float dj = d * static_cast<float>(sc);
  double s = 0;
  for (int i = 0; i < 16; ++i) {
    const double diff = double(dj * static_cast<float>(signed_level(x[i], dj, lo, hi))) - x[i];
    s += diff * diff;
  }
  return s;
}

// The 16 sub-blocks' scales as codes in [code_lo, code_max] (q6_K: -127 .. 127; q3_K: -32 .. 31) against
// a positive fp16 d, the largest magnitude over code_max; each value's level (lo .. hi) against the final
// codes into q.
uint16_t signed_codes(const float* x, int lo, int hi, int code_lo, int code_max, int* sc, int* q) {
  double scale[16], max_abs = 0;
  for (int j = 0; j < 16; ++j) {
    scale[j] = fit_signed_sub(x + 16 * j, lo, hi);
    max_abs = std::max(max_abs, std::fabs(scale[j]));
  }
  const uint16_t dh = scale_half(static_cast<float>(max_abs / code_max));
  const float d = f16_to_f32(dh);
  for (int j = 0; j < 16; ++j) {
    const int c0 = d > 0 ? nearest(scale[j] / d, code_lo, code_max) : 0;
    // As the affine formats: the neighbouring codes too, by squared error once the values are rounded
    // against them, and 0 (every value 0).
    sc[j] = c0;
    double best = signed_sub_error(x + 16 * j, d, c0, lo, hi);
    for (int a = std::max(code_lo, c0 - 1); a <= std::min(code_max, c0 + 1); ++a) {
      const double e = signed_sub_error(x + 16 * j, d, a, lo, hi);
      if (e < best) best = e, sc[j] = a;
    }
    if (signed_sub_error(x + 16 * j, d, 0, lo, hi) < best) sc[j] = 0;
    for (int i = 16 * j; i < 16 * j + 16; ++i) q[i] = signed_level(x[i], d * static_cast<float>(sc[j]), lo, hi);
  }
  return dh;
}

}  // namespace

void quant_q6_K(const float* x, uint8_t* b) {
  std::memset(b, 0, 210);
  int sc[16], q[kQK_K];
  put_half(b + 208, signed_codes(x, -32, 31, -127, 127, sc, q));
  for (int j = 0; j < 16; ++j) b[192 + j] = static_cast<uint8_t>(static_cast<int8_t>(sc[j]));
  uint8_t* ql = b;
  uint8_t* qh = b + 128;
  for (int i = 0; i < kQK_K; ++i) {
    const int v = q[i] + 32;  // 0 codes as 32
    const int h = i / 128, t = (i % 128) / 32, l = i % 32;
    ql[64 * h + 32 * (t % 2) + l] |= static_cast<uint8_t>(t < 2 ? (v & 0xF) : (v & 0xF) << 4);
    qh[32 * h + l] |= static_cast<uint8_t>((v >> 4) << (2 * t));
  }
}

// --- q2_K, q3_K: two bits per value (q3_K: and a third in hmask), scales per 16 values ------------------
// Value i: half h = i / 128, step t = (i % 128) / 32, l = i % 32; bits 2t, 2t + 1 of qs[32 h + l]; sub-block
// (scale) j = i / 16. q3_K: bit 4h + t of hmask[l] is the value's bit 2.

void dequant_q2_K(const uint8_t* b, float* y) {
  const uint8_t* qs = b + 16;
  const float d = half_at(b + 80), dmin = half_at(b + 82);
  for (int i = 0; i < kQK_K; ++i) {
    const int h = i / 128, t = (i % 128) / 32, l = i % 32, sc = b[i / 16];
    const int q = (qs[32 * h + l] >> (2 * t)) & 3;
    y[i] = (d * static_cast<float>(sc & 0xF)) * static_cast<float>(q) - dmin * static_cast<float>(sc >> 4);
  }
}

void quant_q2_K(const float* x, uint8_t* b) {
  std::memset(b, 0, 84);
  int q[kQK_K];
  const AffineCodes c = affine_codes(x, 16, 16, 3, 15, q);
  for (int j = 0; j < 16; ++j) b[j] = static_cast<uint8_t>(c.sc[j] | (c.m[j] << 4));
  for (int i = 0; i < kQK_K; ++i) b[16 + 32 * (i / 128) + i % 32] |= static_cast<uint8_t>(q[i] << (2 * ((i % 128) / 32)));
  put_half(b + 80, c.d);
  put_half(b + 82, c.dmin);
}

// q3_K's 6-bit scale j (stored as sc + 32): its low four bits in the nibble 4 (j / 8) of scales[j % 8], its
// top two in bits 2 (j / 4), + 1 of scales[8 + j % 4].
static int q3_K_scale(const uint8_t* scales, int j) {
  return (((scales[j % 8] >> (4 * (j / 8))) & 0xF) | (((scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}

void dequant_q3_K(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const float d = half_at(b + 108);
  for (int i = 0; i < kQK_K; ++i) {
    const int h = i / 128, t = (i % 128) / 32, l = i % 32;
    const int q = ((qs[32 * h + l] >> (2 * t)) & 3) | (((hmask[l] >> (4 * h + t)) & 1) << 2);
    y[i] = (d * static_cast<float>(q3_K_scale(b + 96, i / 16))) * static_cast<float>(q - 4);
  }
}

void quant_q3_K(const float* x, uint8_t* b) {
  std::memset(b, 0, 110);
  int sc[16], q[kQK_K];
  put_half(b + 108, signed_codes(x, -4, 3, -32, 31, sc, q));
  uint8_t* scales = b + 96;
  for (int j = 0; j < 16; ++j) {
    const int v = sc[j] + 32;
    scales[j % 8] |= static_cast<uint8_t>((v & 0xF) << (4 * (j / 8)));
    scales[8 + j % 4] |= static_cast<uint8_t>((v >> 4) << (2 * (j / 4)));
  }
  for (int i = 0; i < kQK_K; ++i) {
    const int v = q[i] + 4, h = i / 128, t = (i % 128) / 32, l = i % 32;
    b[32 + 32 * h + l] |= static_cast<uint8_t>((v & 3) << (2 * t));
    b[l] |= static_cast<uint8_t>((v >> 2) << (4 * h + t));
  }
}

}  // namespace vkgmm::quant::codec
