// q2_K and q3_K on the CPU (vkgmm/quant.hpp). The dequantizer is pinned twice: on hand-made blocks whose
// values are derived in the comments, and bit for bit on random blocks (every code, scale and mask bit;
// random finite fp16 d and dmin) against decoders written here as ggml-quants.c's dequantize_row_q2_K
// and dequantize_row_q3_K loop (q3_K's scales unpacked through ggml's kmask words), independently of
// reference/quant_k.cpp. The quantizers (least-squares fits, not ggml's): each value at the nearest level
// of its sub-block's stored codes, and the error within a stated bound.
#include <gtest/gtest.h>

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


// ggml's dequantize_row_q2_K: per 128 values, four shifts of the same 32 quant bytes, each giving two
// runs of 16 values with a scale byte each (scale in the low nibble, min in the high one).
V ggml_decode_q2_K(const Bytes& b) {
  V y(b.size() / 84 * 256);
  float* out = y.data();
  for (size_t i = 0; i < b.size() / 84; ++i) {
    const uint8_t* x = &b[i * 84];
    const float d = half(x + 80), min = half(x + 82);
    const uint8_t* q = x + 16;
    int is = 0;
    for (int n = 0; n < 256; n += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        uint8_t sc = x[is++];
        float dl = d * (sc & 0xF), ml = min * (sc >> 4);
        for (int l = 0; l < 16; ++l) *out++ = dl * int8_t((q[l] >> shift) & 3) - ml;
        sc = x[is++];
        dl = d * (sc & 0xF), ml = min * (sc >> 4);
        for (int l = 0; l < 16; ++l) *out++ = dl * int8_t((q[l + 16] >> shift) & 3) - ml;
        shift += 2;
      }
      q += 32;
    }
  }
  return y;
}

// ggml's dequantize_row_q3_K: the 12 scale bytes unpacked into 16 int8 scales by the kmask words, then per
// 128 values four shifts of 32 quant bytes with one hmask bit each (the mask moving on through both
// halves), 4 taken off where the mask bit is clear.
V ggml_decode_q3_K(const Bytes& b) {
  constexpr uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
  V y(b.size() / 110 * 256);
  float* out = y.data();
  for (size_t i = 0; i < b.size() / 110; ++i) {
    const uint8_t* x = &b[i * 110];
    const float d_all = half(x + 108);
    const uint8_t *q = x + 32, *hm = x;
    uint8_t m = 1;
    uint32_t aux[4];
    std::memcpy(aux, x + 96, 12);
    const uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
    int8_t scales[16];
    std::memcpy(scales, aux, 16);
    int is = 0;
    for (int n = 0; n < 256; n += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        float dl = d_all * (scales[is++] - 32);
        for (int l = 0; l < 16; ++l) *out++ = dl * (int8_t((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
        dl = d_all * (scales[is++] - 32);
        for (int l = 0; l < 16; ++l) *out++ = dl * (int8_t((q[l + 16] >> shift) & 3) - ((hm[l + 16] & m) ? 0 : 4));
        shift += 2;
        m = uint8_t(m << 1);
      }
      q += 32;
    }
  }
  return y;
}

TEST(QuantLowBits, RandomBlocksDecodeAsGgmlsLoopsBitForBit) {
  std::mt19937 rng(31);
  const size_t blocks = 512;
  Bytes q2(blocks * 84), q3(blocks * 110);
  for (auto& v : q2) v = uint8_t(rng());
  for (auto& v : q3) v = uint8_t(rng());
  for (size_t i = 0; i < blocks; ++i) {
    put(&q2[i * 84 + 80], random_half(rng));
    put(&q2[i * 84 + 82], random_half(rng));
    put(&q3[i * 110 + 108], random_half(rng));
  }
  expect_same_bits(dequantize(DType::q2_K, q2, blocks * 256), ggml_decode_q2_K(q2), DType::q2_K);
  expect_same_bits(dequantize(DType::q3_K, q3, blocks * 256), ggml_decode_q3_K(q3), DType::q3_K);
}

TEST(QuantLowBits, Q2_KHandMadeBlock) {
  // d = 0.5 (0x3800), dmin = 0.25 (0x3400). scales[0] = 0x23: scale 3, min 2 (values 0..15);
  // scales[9] = 0x41: scale 1, min 4 (values 144..159: half 1, step 0, its second run).
  // qs[0] = 0b11100100: value 0 (bits 0-1) has code 0: 1.5 * 0 - 0.5 = -0.5. qs[32 + 16] = 0b10: value 144
  // (half 1, l 16) has code 2: 0.5 * 2 - 1 = 0.
  Bytes b(84, 0);
  b[0] = 0x23, b[9] = 0x41, b[2] = 0x50;  // scales[2]: scale 0, min 5 (values 32..47)
  b[16] = 0b11100100, b[16 + 32 + 16] = 0b10, b[16 + 5] = 0b11;  // value 5 = 1.5 * 3 - 0.5 = 4
  put(&b[80], 0x3800), put(&b[82], 0x3400);
  const V y = dequantize(DType::q2_K, b, 256);
  EXPECT_EQ(y[0], -0.5f);
  EXPECT_EQ(y[5], 4.0f);
  EXPECT_EQ(y[1], -0.5f);    // code 0 of the same run
  EXPECT_EQ(y[32], -1.25f);  // code 1 (qs[0] bits 2-3) times scale 0, less 5 * 0.25
  EXPECT_EQ(y[64], 0.0f);    // scales[4] = 0: code 2 (qs[0] bits 4-5) times 0, less 0
  EXPECT_EQ(y[144], 0.0f);
  EXPECT_EQ(y[145], -1.0f);  // code 0: 0 - 4 * 0.25
}

TEST(QuantLowBits, Q3_KHandMadeBlock) {
  // d = 2 (0x4000). Scale j's 6 bits: the low nibble from scales[j % 8] (nibble j / 8), the top two from
  // scales[8 + j % 4] (bits 2 (j / 4)); the value is (s - 32).
  // j = 0: low 0x5, top 0b10 -> 0x25 = 37 -> 5; j = 13: low (scales[5] >> 4) = 0xC, top bits 6-7 of
  // scales[9] = 0b01 -> 0x1C = 28 -> -4.
  Bytes b(110, 0);
  uint8_t* scales = &b[96];
  scales[0] = 0x05, scales[8] = 0b10;
  scales[5] = 0xC0, scales[9] = 0b01000000;
  // Value 0 (half 0, step 0, l 0): qs[0] bits 0-1 = 0b11, hmask[0] bit 0 set: q = 7 -> 3: 2 * 5 * 3 = 30.
  // Value 1: qs[1] = 0, hmask clear: q = 0 -> -4: 2 * 5 * -4 = -40.
  b[32] = 0b11, b[0] = 0b1;
  // Value 208 (half 1, step 2, l 16: scale 13): qs[32 + 32 + 16] bits 4-5 = 0b01, hmask[16] bit 4 + 2 = 6
  // clear: q = 1 -> -3: 2 * -4 * -3 = 24.
  b[32 + 48] = 0b010000, b[16] = 0b10111111;  // every bit but 6
  put(&b[108], 0x4000);
  const V y = dequantize(DType::q3_K, b, 256);
  EXPECT_EQ(y[0], 30.0f);
  EXPECT_EQ(y[1], -40.0f);
  EXPECT_EQ(y[208], 24.0f);
  EXPECT_EQ(y[209], 32.0f);  // qs 0, hmask[17] clear: -4 * 2 * -4
  // Values 16 of step 0 (l 16): hmask[16] bit 0 set, qs 0: q = 4 -> 0.
  EXPECT_EQ(y[16], 0.0f);
}

// q3_K's scale j from a block's bytes, as the comment above reads them.
int q3_scale(const uint8_t* blk, int j) {
  const uint8_t* s = blk + 96;
  return (((s[j % 8] >> (4 * (j / 8))) & 0xF) | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}

// Each value at its nearest level among those its sub-block's stored codes decode to, and the relative RMS
// error of random normal data under a bound: 2 bits per value about 0.33 (q2_K), 3 bits about 0.18 (q3_K).
TEST(QuantLowBits, EachValueAtItsSubBlocksNearestLevel) {
  for (float scale : {1e-3f, 1.0f, 300.0f}) {
    V x = normal_values(256 * 64, 13, scale);
    for (size_t i = 0; i < x.size(); i += 389) x[i] *= 8;  // sub-blocks of other scales
    for (DType t : {DType::q2_K, DType::q3_K}) {
      SCOPED_TRACE(vkgmm::dtype_name(t));
      const Bytes q = quantize(t, x.data(), x.size());
      const V y = dequantize(t, q, x.size());
      const size_t size = vkgmm::block_bytes(t);
      double err = 0, sig = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        const uint8_t* blk = &q[i / 256 * size];
        const int j = int(i % 256 / 16);
        double best = INFINITY;
        if (t == DType::q2_K) {
          const float dj = half(blk + 80) * float(blk[j] & 0xF), mj = half(blk + 82) * float(blk[j] >> 4);
          for (int l = 0; l <= 3; ++l) best = std::min(best, std::fabs(double(dj * float(l) - mj) - x[i]));
        } else {
          const float dj = half(blk + 108) * float(q3_scale(blk, j));
          for (int l = -4; l <= 3; ++l) best = std::min(best, std::fabs(double(dj * float(l)) - x[i]));
        }
        ASSERT_LE(std::fabs(double(y[i]) - x[i]), best * (1 + 1e-12) + 1e-30) << scale << " " << i;
        err += (double(y[i]) - x[i]) * (double(y[i]) - x[i]), sig += double(x[i]) * x[i];
      }
      EXPECT_LT(std::sqrt(err / sig), t == DType::q2_K ? 0.40 : 0.22) << scale;
    }
  }
}

// A block of equal values, zeros and the largest finite floats stay finite, signed and near.
TEST(QuantLowBits, ConstantsAndExtremes) {
  for (DType t : {DType::q2_K, DType::q3_K}) {
    SCOPED_TRACE(vkgmm::dtype_name(t));
    const V zeros(256, 0.0f);
    for (float v : dequantize(t, quantize(t, zeros.data(), 256), 256)) EXPECT_EQ(v, 0.0f);
    V x(256);
    for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 2 ? 1.0f : -1.0f) * 6.0e4f;
    const V y = dequantize(t, quantize(t, x.data(), 256), 256);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_TRUE(std::isfinite(y[i])) << i;
      EXPECT_NEAR(y[i], x[i], 0.05 * 6.0e4) << i;
    }
  }
}

}  // namespace
