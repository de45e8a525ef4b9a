// The formats q4_1, q5_0, q5_1, iq4_nl, q5_K and iq4_xs on the CPU (vkgmm/quant.hpp). The dequantizer is
// pinned twice: on hand-made blocks whose values are derived in the comments, and bit for bit on random
// blocks (every code, sign and fifth bit; random finite fp16 scales and mins) against decoders written
// here the way ggml-quants.c's dequantize_row_* loops are (two values per quant byte, qh shifted per
// pair), independently of reference/quant_small.cpp. The quantizers: round trips within their stated
// bounds, and, for q4_1, q5_0 and q5_1, every value at least as close as ggml's reference quantizers
// (re-implemented here from quantize_row_*_ref: the same arithmetic).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "vkgmm/convert.hpp"
#include "vkgmm/quant.hpp"
#include "vkgmm/types.hpp"
#include "quant_blocks.hpp"

namespace {

using vkgmm::DType;
using vkgmm::quant::dequantize;
using vkgmm::quant::quantize;
using namespace vkgmm::test::blocks;

constexpr DType kNew[] = {DType::q4_1, DType::q5_0, DType::q5_1, DType::iq4_nl, DType::q5_K, DType::iq4_xs};
constexpr int8_t kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};


// ggml's get_scale_min_k4: sub-block j's 6-bit scale and min from the 12 packed bytes q.
void scale_min_k4(int j, const uint8_t* q, int& d, int& m) {
  if (j < 4) {
    d = q[j] & 63, m = q[j + 4] & 63;
  } else {
    d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// ggml's dequantize_row_q5_K: per 64 values two sub-blocks, ql's low nibbles plus 16 where qh's bit u1,
// then its high nibbles plus 16 where bit u2; u1 and u2 move up two bits per 64 values.
V ggml_decode_q5_K(const Bytes& b) {
  V y(b.size() / 176 * 256);
  float* out = y.data();
  for (size_t i = 0; i < b.size() / 176; ++i) {
    const uint8_t* x = &b[i * 176];
    const float d = half(x), min = half(x + 2);
    const uint8_t *ql = x + 48, *qh = x + 16;
    int is = 0;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0; j < 256; j += 64) {
      int sc, m;
      scale_min_k4(is + 0, x + 4, sc, m);
      const float d1 = d * sc, m1 = min * m;
      scale_min_k4(is + 1, x + 4, sc, m);
      const float d2 = d * sc, m2 = min * m;
      for (int l = 0; l < 32; ++l) *out++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *out++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
      ql += 32, is += 2;
      u1 = uint8_t(u1 << 2), u2 = uint8_t(u2 << 2);
    }
  }
  return y;
}

// ggml's dequantize_row_iq4_xs: per 32 values the scale ls from scales_l's nibble and scales_h's two bits,
// dl = d * (ls - 32), then 16 bytes giving values j (low nibble) and j + 16 (high nibble).
V ggml_decode_iq4_xs(const Bytes& b) {
  V y(b.size() / 136 * 256);
  float* out = y.data();
  for (size_t i = 0; i < b.size() / 136; ++i) {
    const uint8_t* x = &b[i * 136];
    const float d = half(x);
    const uint16_t scales_h = uint16_t(x[2] | x[3] << 8);
    const uint8_t* qs = x + 8;
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = ((x[4 + ib / 2] >> 4 * (ib % 2)) & 0xf) | (((scales_h >> 2 * ib) & 3) << 4);
      const float dl = d * (ls - 32);
      for (int j = 0; j < 16; ++j) out[j] = dl * kIq4nl[qs[j] & 0xf], out[j + 16] = dl * kIq4nl[qs[j] >> 4];
      out += 32, qs += 16;
    }
  }
  return y;
}

// ggml's loops: for j < 16, byte qs[j] gives values j (low nibble) and j + 16 (high nibble); q5's fifth
// bits are qh >> j (moved to bit 4) and qh >> (j + 12) (bit 4 already).
V ggml_decode(DType t, const Bytes& b) {
  if (t == DType::q5_K) return ggml_decode_q5_K(b);
  if (t == DType::iq4_xs) return ggml_decode_iq4_xs(b);
  const size_t size = vkgmm::block_bytes(t), blocks = b.size() / size;
  V y(blocks * 32);
  for (size_t i = 0; i < blocks; ++i) {
    const uint8_t* x = &b[i * size];
    float* out = &y[i * 32];
    const float d = half(x);
    const float m = (t == DType::q4_1 || t == DType::q5_1) ? half(x + 2) : 0.0f;
    const uint8_t* qs = x + (t == DType::q4_1 ? 4 : t == DType::q5_0 ? 6 : t == DType::q5_1 ? 8 : 2);
    uint32_t qh = 0;
    if (t == DType::q5_0 || t == DType::q5_1) std::memcpy(&qh, x + (t == DType::q5_0 ? 2 : 4), 4);
    for (int j = 0; j < 16; ++j) {
      const int lo = qs[j] & 0x0F, hi = qs[j] >> 4;
      const int xh0 = int(((qh >> j) << 4) & 0x10), xh1 = int((qh >> (j + 12)) & 0x10);
      switch (t) {
        case DType::q4_1: out[j] = lo * d + m, out[j + 16] = hi * d + m; break;
        case DType::q5_0: out[j] = ((lo | xh0) - 16) * d, out[j + 16] = ((hi | xh1) - 16) * d; break;
        case DType::q5_1: out[j] = (lo | xh0) * d + m, out[j + 16] = (hi | xh1) * d + m; break;
        default: out[j] = d * kIq4nl[lo], out[j + 16] = d * kIq4nl[hi]; break;
      }
    }
  }
  return y;
}

TEST(QuantFormats, RandomBlocksDecodeAsGgmlsLoopsBitForBit) {
  std::mt19937 rng(29);
  for (DType t : kNew) {
    const size_t blocks = 512, size = vkgmm::block_bytes(t), values = vkgmm::block_elements(t);
    Bytes b(blocks * size);
    for (auto& v : b) v = uint8_t(rng());
    for (size_t i = 0; i < blocks; ++i) {
      put(&b[i * size], random_half(rng));
      if (t == DType::q4_1 || t == DType::q5_1 || t == DType::q5_K) put(&b[i * size + 2], random_half(rng));
    }
    expect_same_bits(dequantize(t, b, blocks * values), ggml_decode(t, b), t);
  }
}

TEST(QuantFormats, HandMadeBlocks) {
  // q4_1: d = 0.5 (0x3800), m = -1 (0xBC00); qs[0] = 0x2F: value 0 = 15 * 0.5 - 1 = 6.5, value 16 =
  // 2 * 0.5 - 1 = 0; qs[15] = 0x10: value 15 = -1, value 31 = 0.5 - 1 = -0.5.
  Bytes q41(20, 0);
  put(&q41[0], 0x3800), put(&q41[2], 0xBC00);
  q41[4] = 0x2F, q41[4 + 15] = 0x10;
  V y = dequantize(DType::q4_1, q41, 32);
  EXPECT_EQ(y[0], 6.5f); EXPECT_EQ(y[16], 0.0f); EXPECT_EQ(y[15], -1.0f); EXPECT_EQ(y[31], -0.5f); EXPECT_EQ(y[1], -1.0f);
  // q5_0: d = 1, qh = 0x80000001 (bytes 01 00 00 80: the fifth bits of values 0 and 31); qs[0] = 0x21:
  // value 0 = (1 + 16) - 16 = 1, value 16 = 2 - 16 = -14; value 31 = (0 + 16) - 16 = 0; value 15 = -16.
  Bytes q50(22, 0);
  put(&q50[0], 0x3C00);
  q50[2] = 0x01, q50[5] = 0x80, q50[6] = 0x21;
  y = dequantize(DType::q5_0, q50, 32);
  EXPECT_EQ(y[0], 1.0f); EXPECT_EQ(y[16], -14.0f); EXPECT_EQ(y[31], 0.0f); EXPECT_EQ(y[15], -16.0f);
  // q5_1: d = 0.25 (0x3400), m = 2 (0x4000), qh = 0x00010000 (value 16's fifth bit); qs[0] = 0xF3: value 0
  // = 3 * 0.25 + 2 = 2.75, value 16 = (15 + 16) * 0.25 + 2 = 9.75; value 17 = 2.
  Bytes q51(24, 0);
  put(&q51[0], 0x3400), put(&q51[2], 0x4000);
  q51[6] = 0x01, q51[8] = 0xF3;
  y = dequantize(DType::q5_1, q51, 32);
  EXPECT_EQ(y[0], 2.75f); EXPECT_EQ(y[16], 9.75f); EXPECT_EQ(y[17], 2.0f);
  // iq4_nl: d = -2 (0xC000); qs[0] = 0xF0: value 0 = -2 * -127 = 254, value 16 = -2 * 113 = -226; qs[1] =
  // 0x87: value 1 = -2 * -10 = 20, value 17 = -2 * 1 = -2.
  Bytes nl(18, 0);
  put(&nl[0], 0xC000);
  nl[2] = 0xF0, nl[3] = 0x87;
  y = dequantize(DType::iq4_nl, nl, 32);
  EXPECT_EQ(y[0], 254.0f); EXPECT_EQ(y[16], -226.0f); EXPECT_EQ(y[1], 20.0f); EXPECT_EQ(y[17], -2.0f);
}

TEST(QuantFormats, Q5_KHandMadeBlock) {
  // d = 0.5, dmin = 0.25; sub-block 0: scale 2, min 4 (bytes 0 and 4); sub-block 1: scale 3, min 1
  // (bytes 1 and 5); sub-block 2 (chunk 1's low nibbles): scale 1 (byte 2), min 0. Value 0: nibble 5
  // (ql[0] low), qh[0] bit 0 set: q = 21, 0.5 * 2 * 21 - 0.25 * 4 = 20. Value 32: ql[0] high nibble 1,
  // qh[0] bit 1 clear: 0.5 * 3 * 1 - 0.25 = 1.25. Value 64: ql[32] low nibble 0, qh[0] bit 2 set: q = 16,
  // 0.5 * 1 * 16 = 8.
  Bytes b(176, 0);
  put(&b[0], 0x3800), put(&b[2], 0x3400);
  b[4] = 2, b[5] = 3, b[6] = 1, b[8] = 4, b[9] = 1;
  b[16] = 0x05;  // qh[0]: bits 0 and 2
  b[48] = 0x15;  // ql[0]
  const V y = dequantize(DType::q5_K, b, 256);
  EXPECT_EQ(y[0], 20.0f);
  EXPECT_EQ(y[32], 1.25f);
  EXPECT_EQ(y[64], 8.0f);
}

TEST(QuantFormats, Iq4XsHandMadeBlock) {
  // d = 0.5 (0x3800); scales_h = 0x0006 (sub-block 0's top bits 2, sub-block 1's 1); scales_l[0] = 0x1F:
  // sub-block 0's ls = 15 | 2 << 4 = 47, dl = 0.5 * 15 = 7.5; sub-block 1's ls = 1 | 1 << 4 = 17, dl = -7.5;
  // every other ls = 0, dl = -16. qs[0] = 0xF0: value 0 = 7.5 * -127 = -952.5, value 16 = 7.5 * 113 =
  // 847.5; qs[16] = 0x08: value 32 = -7.5 * 1 = -7.5, value 48 = -7.5 * -127 = 952.5; qs[32] = 0x00:
  // value 64 = -16 * -127 = 2032.
  Bytes b(136, 0);
  put(&b[0], 0x3800);
  b[2] = 0x06, b[4] = 0x1F, b[8] = 0xF0, b[8 + 16] = 0x08;
  const V y = dequantize(DType::iq4_xs, b, 256);
  EXPECT_EQ(y[0], -952.5f);
  EXPECT_EQ(y[16], 847.5f);
  EXPECT_EQ(y[32], -7.5f);
  EXPECT_EQ(y[48], 952.5f);
  EXPECT_EQ(y[64], 2032.0f);
}

// iq4_xs: each value at its nearest level of its sub-block's stored scale d * (ls - 32), and the largest
// sub-block scale at -32 d (ls 0) or the values close to it: a round trip keeps most of the signal.
TEST(QuantFormats, Iq4XsPutsEachValueAtItsSubBlocksNearestLevel) {
  for (float scale : {1e-3f, 1.0f, 300.0f}) {
    V x = normal_values(256 * 64, 11, scale);
    for (size_t i = 0; i < x.size(); i += 389) x[i] *= 8;  // sub-blocks of other scales
    const Bytes q = quantize(DType::iq4_xs, x.data(), x.size());
    const V y = dequantize(DType::iq4_xs, q, x.size());
    double err = 0, sig = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const uint8_t* blk = &q[i / 256 * 136];
      const int ib = int(i % 256 / 32), scales_h = blk[2] | blk[3] << 8;
      const int ls = ((blk[4 + ib / 2] >> 4 * (ib % 2)) & 0xf) | (((scales_h >> 2 * ib) & 3) << 4);
      const float dl = half(blk) * float(ls - 32);
      double best = INFINITY;
      for (int8_t l : kIq4nl) best = std::min(best, std::fabs(double(dl * float(l)) - x[i]));
      ASSERT_LE(std::fabs(double(y[i]) - x[i]), best * (1 + 1e-12) + 1e-30) << scale << " " << i;
      err += (double(y[i]) - x[i]) * (double(y[i]) - x[i]), sig += double(x[i]) * x[i];
    }
    EXPECT_LT(std::sqrt(err / sig), 0.15) << scale;  // 4 bits per value: about 0.1
  }
}

// q5_K: each value at its nearest level d * sc * q - dmin * m, q in [0, 31], of its sub-block's codes.
TEST(QuantFormats, Q5_KPutsEachValueAtItsSubBlocksNearestLevel) {
  const V x = normal_values(256 * 64, 9, 2.0f);
  const Bytes q = quantize(DType::q5_K, x.data(), x.size());
  const V y = dequantize(DType::q5_K, q, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const uint8_t* blk = &q[i / 256 * 176];
    int sc, m;
    scale_min_k4(int(i % 256 / 32), blk + 4, sc, m);
    const float dj = half(blk) * sc, mj = half(blk + 2) * m;
    double best = INFINITY;
    for (int l = 0; l <= 31; ++l) best = std::min(best, std::fabs(double(dj * l - mj) - x[i]));
    ASSERT_LE(std::fabs(double(y[i]) - x[i]), best * (1 + 1e-12) + 1e-30) << i;
  }
}

// Each value is the level nearest it among the levels its block's stored fields decode to: d * q + m,
// q in [lo, hi] (q4_1: 0 .. 15, m the min; q5_0: -16 .. 15, m = 0; q5_1: 0 .. 31).
TEST(QuantFormats, AffineFormatsPutEachValueAtItsNearestLevel) {
  struct Grid {
    DType t;
    int lo, hi, min_at;  // min_at: the min's byte offset, or -1
  };
  for (const Grid& g : {Grid{DType::q4_1, 0, 15, 2}, Grid{DType::q5_0, -16, 15, -1}, Grid{DType::q5_1, 0, 31, 2}}) {
    const V x = normal_values(32 * 256, 5, 3.0f);
    const Bytes q = quantize(g.t, x.data(), x.size());
    const V y = dequantize(g.t, q, x.size());
    const size_t size = vkgmm::block_bytes(g.t);
    for (size_t i = 0; i < x.size(); ++i) {
      const uint8_t* blk = &q[i / 32 * size];
      const double d = half(blk), m = g.min_at >= 0 ? half(blk + g.min_at) : 0.0;
      double best = INFINITY;
      for (int l = g.lo; l <= g.hi; ++l) best = std::min(best, std::fabs(float(d * l + m) - double(x[i])));
      ASSERT_LE(std::fabs(double(y[i]) - x[i]), best * (1 + 1e-12) + 1e-30) << vkgmm::dtype_name(g.t) << " " << i;
    }
  }
}

// iq4_nl: a block's squared error is at most that of its plain scale d0 = max / -127 (stored as fp16,
// each value at its nearest level), which is at most 32 (14 d0)^2.
TEST(QuantFormats, Iq4NlNoWorseThanItsPlainScale) {
  for (float scale : {1e-3f, 1.0f, 300.0f}) {
    const V x = normal_values(32 * 512, 7, scale);
    const V y = dequantize(DType::iq4_nl, quantize(DType::iq4_nl, x.data(), x.size()), x.size());
    for (size_t b = 0; b < x.size() / 32; ++b) {
      float amax = 0, max = 0;
      for (size_t i = b * 32; i < b * 32 + 32; ++i)
        if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
      const float d0 = vkgmm::f16_to_f32(vkgmm::f32_to_f16(max / -127.0f));
      double ours = 0, plain = 0;
      for (size_t i = b * 32; i < b * 32 + 32; ++i) {
        double near = INFINITY;
        for (int8_t l : kIq4nl) near = std::min(near, std::fabs(double(float(l) * d0) - x[i]));
        plain += near * near;
        ours += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
      }
      ASSERT_LE(ours, plain * (1 + 1e-9)) << "block " << b;
      ASSERT_LE(ours, 32 * std::pow(14.0 * d0, 2) * 1.01) << "block " << b;
    }
  }
}

// ggml's quantize_row_q4_1_ref and q5_1_ref: d = (max - min) / (levels - 1), id = 1 / d, codes
// (int)((x - min) * id + 0.5) (q4_1 at most 15); q5_0_ref: d = max / -16, codes min(31, (int8)(x * id +
// 16.5)); the fifth bits at bit j of qh.
Bytes ggml_quantize(DType t, const V& x) {
  const size_t size = vkgmm::block_bytes(t);
  Bytes out(x.size() / 32 * size, 0);
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const float* v = &x[b * 32];
    uint8_t* o = &out[b * size];
    int q[32];
    if (t == DType::q5_0) {
      float amax = 0, max = 0;
      for (int j = 0; j < 32; ++j)
        if (amax < std::fabs(v[j])) amax = std::fabs(v[j]), max = v[j];
      const float d = max / -16, id = d ? 1.0f / d : 0.0f;
      put(o, vkgmm::f32_to_f16(d));
      for (int j = 0; j < 32; ++j) q[j] = std::min(31, int(static_cast<int8_t>(v[j] * id + 16.5f)));
    } else {
      float lo = v[0], hi = v[0];
      for (int j = 1; j < 32; ++j) lo = std::min(lo, v[j]), hi = std::max(hi, v[j]);
      const float d = (hi - lo) / (t == DType::q4_1 ? 15 : 31), id = d ? 1.0f / d : 0.0f;
      put(o, vkgmm::f32_to_f16(d)), put(o + 2, vkgmm::f32_to_f16(lo));
      for (int j = 0; j < 32; ++j) {
        const int c = int(static_cast<uint8_t>((v[j] - lo) * id + 0.5f));
        q[j] = t == DType::q4_1 ? std::min(15, c) : c;
      }
    }
    uint8_t* qs = o + (t == DType::q4_1 ? 4 : t == DType::q5_0 ? 6 : 8);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      qs[j] = uint8_t((q[j] & 0x0F) | (q[j + 16] & 0x0F) << 4);
      qh |= uint32_t((q[j] & 0x10) >> 4) << j;
      qh |= uint32_t((q[j + 16] & 0x10) >> 4) << (j + 16);
    }
    if (t != DType::q4_1) std::memcpy(o + (t == DType::q5_0 ? 2 : 4), &qh, 4);
  }
  return out;
}

TEST(QuantFormats, EveryValueAtLeastAsCloseAsGgmls) {
  for (DType t : {DType::q4_1, DType::q5_0, DType::q5_1})
    for (float scale : {1e-3f, 1.0f, 300.0f}) {
      V x = normal_values(32 * 2048, 13, scale);
      for (size_t i = 0; i < x.size(); i += 97) x[i] *= 20;  // rare outliers
      const V ours = dequantize(t, quantize(t, x.data(), x.size()), x.size());
      const V ref = dequantize(t, ggml_quantize(t, x), x.size());
      size_t better = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        const float eo = std::fabs(ours[i] - x[i]), eg = std::fabs(ref[i] - x[i]);
        ASSERT_LE(eo, eg) << vkgmm::dtype_name(t) << " value " << i << " = " << x[i];
        better += eo < eg;
      }
      EXPECT_GT(better, 0u) << vkgmm::dtype_name(t);  // ggml's rounding against unrounded fields shows
    }
}

}  // namespace
