// GGUF's block formats on the CPU (vkgmm/quant.hpp). The dequantizers are pinned on byte vectors whose
// values are derived here by hand from the format definitions (ggml-common.h's block_* structs and
// ggml-quants.c's dequantize_row_*), independently of reference/quant.cpp: the derivations are the comments.
// The quantizers are checked by round trips (error bounds on random data, exact on representable data,
// zeros, extremes) and against a re-implementation of ggml's reference quantizers (quantize_row_*_ref)
// for q8_0, q4_0 and mxfp4: never less accurate.
//
// fp16 encodings used below (sign | 5-bit exponent, bias 15 | 10-bit mantissa), little-endian in a block:
//   0x3C00 = 0 01111 0000000000 = 2^0 = 1.0           0xBC00 = -1.0
//   0x3800 = 0 01110 0...       = 2^-1 = 0.5          0x3400 = 0 01101 0... = 2^-2 = 0.25
//   0xC000 = 1 10000 0...       = -2^1 = -2.0         0x3E00 = 0 01111 1000000000 = 1.5
//   0x0001 = 0 00000 0000000001 = subnormal 1 * 2^-24
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "block_formats.hpp"
#include "vkgmm/convert.hpp"
#include "vkgmm/quant.hpp"
#include "vkgmm/reference.hpp"
#include "vkgmm/types.hpp"

namespace {

using vkgmm::DType;
using vkgmm::test::all_dtypes;
using vkgmm::test::block_formats;
using vkgmm::quant::dequantize;
using vkgmm::quant::quantize;
using Bytes = std::vector<uint8_t>;
using V = std::vector<float>;

const std::vector<DType> kFormats = block_formats();

// Expects got == want value for value, bit for bit apart from the sign of zero.
void expect_values(const V& got, const V& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "value " << i;
}

// ---- dequantizers on hand-made blocks -------------------------------------------------------------

TEST(QuantDequant, Q8_0ScaleAndSignedBytes) {
  // block_q8_0 { half d; int8 qs[32] }, y[j] = d * qs[j]. Three blocks: d = 0.5, d = -2.0, d = 2^-24.
  Bytes b(3 * 34, 0);
  b[0] = 0x00, b[1] = 0x38;  // d = 0x3800 = 0.5
  b[2 + 0] = 0x01;           // qs[0] = 1          ->  0.5
  b[2 + 1] = 0xFF;           // qs[1] = -1 (two's complement) -> -0.5
  b[2 + 2] = 0x7F;           // qs[2] = 127        ->  63.5
  b[2 + 3] = 0x80;           // qs[3] = -128       -> -64
  b[2 + 31] = 0x10;          // qs[31] = 16        ->  8
  b[34 + 0] = 0x00, b[34 + 1] = 0xC0;  // d = 0xC000 = -2.0: the sign of d flips every value
  b[34 + 2] = 0x03;                    // qs[0] = 3  -> -6
  b[34 + 3] = 0xFD;                    // qs[1] = -3 ->  6
  b[68 + 0] = 0x01, b[68 + 1] = 0x00;  // d = 0x0001 = 2^-24 (fp16 subnormal, widened exactly)
  b[68 + 2] = 100;                     // qs[0] = 100 -> 100 * 2^-24
  V want(96, 0.0f);
  want[0] = 0.5f, want[1] = -0.5f, want[2] = 63.5f, want[3] = -64.0f, want[31] = 8.0f;
  want[32] = -6.0f, want[33] = 6.0f;
  want[64] = 100.0f * std::ldexp(1.0f, -24);
  expect_values(dequantize(DType::q8_0, b, 96), want);
}

TEST(QuantDequant, Q4_0NibbleOrderAndOffset) {
  // block_q4_0 { half d; uint8 qs[16] }: value j < 16 is the LOW nibble of qs[j], value j + 16 the HIGH
  // nibble of qs[j]; y = d * (nibble - 8).
  Bytes b(2 * 18, 0x88);  // nibble 8 everywhere: value 0
  b[0] = 0x00, b[1] = 0x3C;  // d = 1.0
  b[2 + 0] = 0xF0;           // low 0  -> y[0]  = (0 - 8)  = -8;  high 15 -> y[16] = 7
  b[2 + 1] = 0x98;           // low 8  -> y[1]  = 0;              high 9  -> y[17] = 1
  b[2 + 15] = 0x7A;          // low 10 -> y[15] = 2;              high 7  -> y[31] = -1
  b[18 + 0] = 0x00, b[18 + 1] = 0x3E;  // d = 1.5
  b[20 + 0] = 0x0F;                    // low 15 -> (15 - 8) * 1.5 = 10.5; high 0 -> (0 - 8) * 1.5 = -12
  b[20 + 2] = 0x1C;                    // low 12 -> 4 * 1.5 = 6;           high 1 -> -7 * 1.5 = -10.5
  V want(64, 0.0f);
  want[0] = -8, want[16] = 7, want[17] = 1, want[15] = 2, want[31] = -1;
  want[32] = 10.5f, want[48] = -12.0f, want[34] = 6.0f, want[50] = -10.5f;
  expect_values(dequantize(DType::q4_0, b, 64), want);

  // A negative d mirrors: d = -1.0, nibble 15 -> (15 - 8) * -1 = -7, nibble 0 -> 8.
  Bytes n(18, 0x88);
  n[0] = 0x00, n[1] = 0xBC;
  n[2] = 0x0F;
  V w2(32, 0.0f);
  w2[0] = -7, w2[16] = 8;
  expect_values(dequantize(DType::q4_0, n, 32), w2);
}

TEST(QuantDequant, Mxfp4E8M0ScaleAndE2M1Codes) {
  // block_mxfp4 { uint8 e; uint8 qs[16] }, nibbles ordered as in q4_0. A code is e2m1: sign bit 3,
  // exponent bits 2..1 (bias 1), mantissa bit 0; exponent 0 is subnormal (m * 0.5), else
  // 2^(exp - 1) * (1 + m / 2). So codes 0..7 are 0, 0.5, 1, 1.5, 2, 3, 4, 6 and 8..15 their negatives.
  // The E8M0 byte is the scale 2^(e - 127). (ggml stores the codes doubled, kvalues_mxfp4 = 0, 1, 2, 3,
  // 4, 6, 8, 12, and halves the scale to match, ggml_e8m0_to_fp32_half: the product is the same.)
  Bytes b(4 * 17, 0);
  b[0] = 127;  // scale 2^0 = 1: the values are the e2m1 values themselves
  b[1 + 0] = 0x71;  // low 1 = 0001 = 0.5 -> y[0];     high 7 = 0111 = 2^2 * 1.5 = 6 -> y[16]
  b[1 + 1] = 0xF8;  // low 8 = 1000 = -0 -> y[1] = 0;  high 15 = 1111 = -6 -> y[17]
  b[1 + 2] = 0x5A;  // low 10 = 1010 = -(2^0) = -1;     high 5 = 0101 = 2^1 * 1.5 = 3
  b[1 + 3] = 0x2C;  // low 12 = 1100 = -(2^1) = -2;     high 2 = 0010 = 2^0 = 1
  b[17] = 130;      // scale 2^3 = 8
  b[18 + 0] = 0x17; // low 7 -> 6 * 8 = 48; high 1 -> 0.5 * 8 = 4
  b[34] = 0;        // scale 2^-127 (ggml reads e = 0 as a number, not as a special value)
  b[35 + 0] = 0x71; // 0.5 * 2^-127 = 2^-128 (an fp32 subnormal) ; 6 * 2^-127
  b[51] = 255;      // scale 2^128: ggml reads 255 as a number too (the OCP spec's NaN is not honoured)
  b[52 + 0] = 0x09; // low 9 = 1001 = -0.5 -> -2^127; high 0 -> 0
  V want(128, 0.0f);
  want[0] = 0.5f, want[16] = 6.0f, want[17] = -6.0f, want[2] = -1.0f, want[18] = 3.0f, want[3] = -2.0f, want[19] = 1.0f;
  want[32] = 48.0f, want[48] = 4.0f;
  want[64] = std::ldexp(1.0f, -128), want[80] = 6.0f * std::ldexp(1.0f, -127);
  want[96] = -std::ldexp(1.0f, 127);
  const V got = dequantize(DType::mxfp4, b, 128);
  expect_values(got, want);
  EXPECT_FALSE(std::signbit(got[1]));  // code 8 (-0) reads as +0: ggml's table has 0 there
}

TEST(QuantDequant, Q4_KSixBitScalesMinsAndNibbles) {
  // block_q4_K { half d, dmin; uint8 scales[12]; uint8 qs[128] } (144 bytes). Sub-block j (values
  // 32j .. 32j + 31) has a 6-bit scale sc_j and min m_j; y = d * sc_j * q - dmin * m_j.
  // Packing (get_scale_min_k4): for j < 4, sc_j = scales[j] & 63 and m_j = scales[j + 4] & 63; for
  // j = 4..7, sc_j = (scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4 and
  //           m_j = (scales[j + 4] >> 4) | (scales[j] >> 6) << 4.
  // Chosen: (sc, m) = j0 (1, 2), j1 (63, 0), j2 (2, 63), j3 (0, 1), j4 (53 = 0b11'0101, 35 = 0b10'0011),
  //         j5 (17 = 0b01'0001, 5 = 0b00'0101), j6 (32 = 0b10'0000, 48 = 0b11'0000), j7 (15, 63 = 0b11'1111).
  // Bytes: scales[0] = sc0 | (sc4 >> 4) << 6 = 1 | 3 << 6 = 0xC1;   scales[1] = 63 | 1 << 6 = 0x7F;
  //        scales[2] = 2 | 2 << 6 = 0x82;                           scales[3] = 0 | 0 << 6 = 0x00;
  //        scales[4] = m0 | (m4 >> 4) << 6 = 2 | 2 << 6 = 0x82;     scales[5] = 0 | 0 << 6 = 0x00;
  //        scales[6] = 63 | 3 << 6 = 0xFF;                          scales[7] = 1 | 3 << 6 = 0xC1;
  //        scales[8] = (sc4 & 15) | (m4 & 15) << 4 = 5 | 3 << 4 = 0x35;  scales[9] = 1 | 5 << 4 = 0x51;
  //        scales[10] = 0 | 0 << 4 = 0x00;                          scales[11] = 15 | 15 << 4 = 0xFF.
  // d = 1.0, dmin = 0.5. The quants: value i lives in qs[32 * (i / 64) + i % 32], the LOW nibble when
  // i % 64 < 32 and the HIGH nibble otherwise: sub-block 2c in the low nibbles of qs[32c .. 32c + 31],
  // sub-block 2c + 1 in their high nibbles.
  Bytes b(144, 0);
  b[0] = 0x00, b[1] = 0x3C;  // d = 1.0
  b[2] = 0x00, b[3] = 0x38;  // dmin = 0.5
  const uint8_t scales[12] = {0xC1, 0x7F, 0x82, 0x00, 0x82, 0x00, 0xFF, 0xC1, 0x35, 0x51, 0x00, 0xFF};
  std::memcpy(&b[4], scales, 12);
  uint8_t* qs = &b[16];
  qs[0] = 0x3F;   // y[0]   (j0, q 15) = 1 * 15 - 0.5 * 2 = 14;     y[32]  (j1, q 3)  = 63 * 3 - 0 = 189
  qs[31] = 0xA1;  // y[31]  (j0, q 1)  = 1 - 1 = 0;               y[63]  (j1, q 10) = 630
  qs[32] = 0x52;  // y[64]  (j2, q 2)  = 2 * 2 - 0.5 * 63 = -27.5; y[96]  (j3, q 5)  = 0 * 5 - 0.5 = -0.5
  qs[64] = 0x07;  // y[128] (j4, q 7)  = 53 * 7 - 0.5 * 35 = 353.5; y[160] (j5, q 0) = -0.5 * 5 = -2.5
  qs[96] = 0xE4;  // y[192] (j6, q 4)  = 32 * 4 - 0.5 * 48 = 104;  y[224] (j7, q 14) = 15 * 14 - 31.5 = 178.5
  // Every other quant is 0: y = -dmin * m_j.
  const float at_zero[8] = {-1.0f, 0.0f, -31.5f, -0.5f, -17.5f, -2.5f, -24.0f, -31.5f};
  V want(256);
  for (int i = 0; i < 256; ++i) want[i] = at_zero[i / 32];
  want[0] = 14, want[32] = 189, want[31] = 0, want[63] = 630, want[64] = -27.5f, want[96] = -0.5f;
  want[128] = 353.5f, want[160] = -2.5f, want[192] = 104, want[224] = 178.5f;
  expect_values(dequantize(DType::q4_K, b, 256), want);
}

TEST(QuantDequant, Q6_KBitAssemblyAndInt8Scales) {
  // block_q6_K { uint8 ql[128]; uint8 qh[64]; int8 scales[16]; half d } (210 bytes: ql at 0, qh at 128,
  // scales at 192, d at 208). y[i] = d * scales[i / 16] * (q_i - 32), q_i six bits: with h = i / 128,
  // t = (i % 128) / 32, l = i % 32, the low four bits are ql[64h + 32 (t % 2) + l] (low nibble for t < 2,
  // high nibble for t >= 2) and the top two bits are bits 2t..2t+1 of qh[32h + l].
  // Background: ql = 0 and qh = 0xAA (every 2-bit field = 2), so q = 32 and y = 0 everywhere.
  Bytes b(210, 0);
  uint8_t* ql = &b[0];
  uint8_t* qh = &b[128];
  int8_t* sc = reinterpret_cast<int8_t*>(&b[192]);
  std::fill(qh, qh + 64, 0xAA);
  for (int j = 0; j < 16; ++j) sc[j] = 1;
  sc[1] = -1, sc[4] = -128, sc[6] = 127, sc[8] = 4, sc[15] = -3;
  b[208] = 0x00, b[209] = 0x34;  // d = 0.25
  // i = 0 (h 0, t 0, l 0; scale 1): q - 32 = 31 -> q = 63 = 0b11'1111: ql[0] low = 15, qh[0] bits 0-1 = 3.
  //   y = 0.25 * 1 * 31 = 7.75.
  // i = 64 (t 2, l 0; sub-block 4, scale -128): q - 32 = -32 -> q = 0: ql[0] high = 0, qh[0] bits 4-5 = 0.
  //   y = 0.25 * -128 * -32 = 1024.
  // i = 96 (t 3, l 0; sub-block 6, scale 127): q - 32 = 1 -> q = 33 = 0b10'0001: ql[32] high = 1, qh[0]
  //   bits 6-7 = 2. y = 0.25 * 127 * 1 = 31.75.   (i = 32, t 1, keeps q = 32: ql[32] low 0, qh[0] bits 2-3 = 2.)
  ql[0] = 0x0F, ql[32] = 0x10, qh[0] = 3 | 2 << 2 | 0 << 4 | 2 << 6;  // 0x8B
  // i = 17 (t 0, l 17; sub-block 1, scale -1): q - 32 = -5 -> q = 27 = 0b01'1011: ql[17] low = 11,
  //   qh[17] bits 0-1 = 1. y = 0.25 * -1 * -5 = 1.25.
  ql[17] = 0x0B, qh[17] = 1 | 2 << 2 | 2 << 4 | 2 << 6;  // 0xA9
  // i = 130 (h 1, t 0, l 2; sub-block 8, scale 4): q - 32 = 7 -> q = 39 = 0b10'0111: ql[66] low = 7, qh[34]
  //   bits 0-1 = 2 (unchanged). y = 0.25 * 4 * 7 = 7.
  ql[66] = 0x07;
  // i = 165 (h 1, t 1, l 5; sub-block 10, scale 1): q - 32 = 20 -> q = 52 = 0b11'0100: ql[64 + 32 + 5 = 101]
  //   low = 4, qh[32 + 5 = 37] bits 2-3 = 3. y = 0.25 * 20 = 5.
  ql[101] = 0x04, qh[37] = 2 | 3 << 2 | 2 << 4 | 2 << 6;  // 0xAE
  // i = 200 (h 1, t 2, l 8; sub-block 12, scale 1): q - 32 = -31 -> q = 1: ql[64 + 8 = 72] high = 1,
  //   qh[40] bits 4-5 = 0. y = 0.25 * -31 = -7.75.
  ql[72] = 0x10, qh[40] = 2 | 2 << 2 | 0 << 4 | 2 << 6;  // 0x8A
  // i = 255 (h 1, t 3, l 31; sub-block 15, scale -3): q - 32 = -17 -> q = 15 = 0b00'1111: ql[64 + 32 + 31 =
  //   127] high = 15, qh[63] bits 6-7 = 0. y = 0.25 * -3 * -17 = 12.75.
  ql[127] = 0xF0, qh[63] = 2 | 2 << 2 | 2 << 4 | 0 << 6;  // 0x2A
  EXPECT_EQ(qh[0], 0x8B);
  EXPECT_EQ(qh[17], 0xA9);
  EXPECT_EQ(qh[37], 0xAE);
  EXPECT_EQ(qh[40], 0x8A);
  EXPECT_EQ(qh[63], 0x2A);
  V want(256, 0.0f);
  want[0] = 7.75f, want[64] = 1024.0f, want[96] = 31.75f, want[17] = 1.25f, want[130] = 7.0f, want[165] = 5.0f;
  want[200] = -7.75f, want[255] = 12.75f;
  expect_values(dequantize(DType::q6_K, b, 256), want);
}

TEST(QuantDequant, AllZeroBlocksAreZero) {
  for (DType t : kFormats) {
    const uint64_t count = 2 * vkgmm::block_elements(t);
    const Bytes zeros(vkgmm::storage_bytes(t, count), 0);
    // Zero bytes: q8_0, q4_0 (d = 0), q4_K (d = dmin = 0), q6_K (d = 0) give 0; mxfp4 gives code 0 (= 0)
    // at scale 2^-127.
    expect_values(dequantize(t, zeros, count), V(count, 0.0f));
    // And zeros quantize to blocks that give zeros back.
    const V x(count, 0.0f);
    const Bytes q = quantize(t, x.data(), count);
    EXPECT_EQ(q.size(), zeros.size()) << vkgmm::dtype_name(t);
    expect_values(dequantize(t, q, count), x);
  }
}

TEST(QuantDequant, ElementTypesDecodeAndPartialBlocksAreRefused) {
  const V x = {1.0f, -2.5f, 3.0f};
  const Bytes f16 = vkgmm::encode(DType::f16, x);
  expect_values(dequantize(DType::f16, f16, 3), x);
  const Bytes b(34, 0);
  EXPECT_THROW(dequantize(DType::q8_0, b, 31), vkgmm::Error);  // not whole blocks
  EXPECT_THROW(dequantize(DType::q8_0, b, 64), vkgmm::Error);  // too few bytes
  EXPECT_THROW(quantize(DType::f32, x.data(), 3), vkgmm::Error);
  const V partial(31, 1.0f);
  EXPECT_THROW(quantize(DType::q4_0, partial.data(), 31), vkgmm::Error);
  V bad(32, 1.0f);
  bad[5] = std::numeric_limits<float>::infinity();
  EXPECT_THROW(quantize(DType::q8_0, bad.data(), 32), vkgmm::Error);
  bad[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(quantize(DType::mxfp4, bad.data(), 32), vkgmm::Error);
}

TEST(QuantDequant, ExpertTensorIsRowsOfBlocksAlongK) {
  // [E = 2, n = 3, k = 64] as q8_0: row (e, r) is blocks 2 (e * 3 + r) and 2 (e * 3 + r) + 1.
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  V w(2 * 3 * 64);
  for (float& v : w) v = u(rng);
  Bytes all;
  V want;
  for (int row = 0; row < 6; ++row) {
    const Bytes q = quantize(DType::q8_0, w.data() + row * 64, 64);
    all.insert(all.end(), q.begin(), q.end());
    const V d = dequantize(DType::q8_0, q, 64);
    want.insert(want.end(), d.begin(), d.end());
  }
  expect_values(vkgmm::quant::dequantize_experts(DType::q8_0, all.data(), 2, 3, 64), want);
  EXPECT_THROW(vkgmm::quant::dequantize_experts(DType::q4_K, all.data(), 1, 1, 128), vkgmm::Error);
  // Sizes whose product wraps are refused, never read as a small tensor.
  EXPECT_THROW(vkgmm::quant::dequantize_experts(DType::q4_0, all.data(), 1, int64_t(1) << 32, int64_t(1) << 32),
               vkgmm::Error);
}

// Counts whose bytes pass 2^64 are refused, not wrapped (f32: 2^62 values; q8_0: 32 values in 34 bytes).
TEST(QuantDequant, StorageBytesRefuseWhatWraps) {
  EXPECT_EQ(vkgmm::storage_bytes(DType::f32, (uint64_t(1) << 62) - 1), ((uint64_t(1) << 62) - 1) * 4);
  EXPECT_THROW(vkgmm::storage_bytes(DType::f32, uint64_t(1) << 62), vkgmm::Error);
  EXPECT_THROW(vkgmm::storage_bytes(DType::q8_0, (UINT64_MAX / 34 + 1) * 32), vkgmm::Error);
  EXPECT_EQ(vkgmm::storage_bytes(DType::q8_0, 64), 68u);
}

// ---- round trips ----------------------------------------------------------------------------------

V random_values(uint64_t count, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  V x(count);
  for (float& v : x) v = u(rng);
  return x;
}

float half_at(const uint8_t* p) { return vkgmm::f16_to_f32(static_cast<uint16_t>(p[0] | p[1] << 8)); }

TEST(QuantRoundTrip, Q8_0WithinHalfAStepAndExactOnItsGrid) {
  const V x = random_values(32 * 64, 1, 3.0f);
  const Bytes q = quantize(DType::q8_0, x.data(), x.size());
  const V y = dequantize(DType::q8_0, q, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = half_at(&q[i / 32 * 34]);
    ASSERT_GT(d, 0.0f);
    EXPECT_LE(std::fabs(y[i] - x[i]), 0.5f * d * (1 + 1e-6f)) << i;
  }
  // Integer multiples of 2^-3 in [-127, 127] with 127 present: d = amax / 127 = 2^-3 is an fp16, so
  // every value comes back exactly.
  V g(64);
  std::mt19937 rng(2);
  for (float& v : g) v = static_cast<float>(static_cast<int>(rng() % 255) - 127) * 0.125f;
  g[7] = 127 * 0.125f, g[40] = -127 * 0.125f;
  expect_values(dequantize(DType::q8_0, quantize(DType::q8_0, g.data(), 64), 64), g);
}

TEST(QuantRoundTrip, Q4_0WithinHalfAStepInsideItsRangeAndExactOnItsGrid) {
  const V x = random_values(32 * 64, 4, 2.0f);
  const Bytes q = quantize(DType::q4_0, x.data(), x.size());
  const V y = dequantize(DType::q4_0, q, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = half_at(&q[i / 32 * 18]);
    // The levels are (q - 8) * d, q in [0, 15]: from -8d to 7d. Inside, half a step; outside (only the
    // far side of the extreme, at most one step beyond 7d), up to a step.
    const float lo = std::min(-8 * d, 7 * d), hi = std::max(-8 * d, 7 * d);
    const float bound = x[i] >= lo && x[i] <= hi ? 0.5f * std::fabs(d) : std::fabs(d) * 1.01f;
    EXPECT_LE(std::fabs(y[i] - x[i]), bound * (1 + 1e-6f)) << i;
  }
  // The extreme maps to level -8 exactly: a block of multiples of 0.25 in [-1.75, 2] whose extreme is
  // +2: d = 2 / -8 = -0.25, and every value is a level.
  V g(32);
  for (int j = 0; j < 32; ++j) g[j] = 0.25f * static_cast<float>((j * 7) % 16 - 7);  // -1.75 .. 2
  g[9] = 2.0f;
  const Bytes gq = quantize(DType::q4_0, g.data(), 32);
  EXPECT_EQ(half_at(gq.data()), -0.25f);
  EXPECT_EQ(gq[2 + 9] & 0xF, 0);  // the extreme's nibble: level -8
  expect_values(dequantize(DType::q4_0, gq, 32), g);
}

TEST(QuantRoundTrip, Mxfp4NearestLevelAndExactOnItsGrid) {
  const V x = random_values(32 * 64, 5, 5.0f);
  const Bytes q = quantize(DType::mxfp4, x.data(), x.size());
  const V y = dequantize(DType::mxfp4, q, x.size());
  const float levels[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (size_t blk = 0; blk < x.size() / 32; ++blk) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[blk * 32 + j]));
    // The exponent is the OCP rule's (floor(log2 amax) - 2) or one above.
    const int rule = std::ilogb(amax) - 2 + 127;
    const int e = q[blk * 17];
    EXPECT_TRUE(e == rule || e == rule + 1) << blk;
    const float s = std::ldexp(1.0f, e - 127);
    for (int j = 0; j < 32; ++j) {
      const float v = x[blk * 32 + j];
      float nearest = std::numeric_limits<float>::max();
      for (float l : levels) nearest = std::min(nearest, std::fabs(std::copysign(l * s, v) - v));
      EXPECT_EQ(std::fabs(y[blk * 32 + j] - v), nearest) << blk << " " << j;
      EXPECT_LE(std::fabs(y[blk * 32 + j] - v), 0.5f * amax);
    }
  }
  // e2m1 values times 2^-3 with a 6 among them: the rule's exponent, and every value exact.
  V g(32);
  for (int j = 0; j < 32; ++j) g[j] = (j % 2 ? -1 : 1) * levels[j % 8] * 0.125f;
  g[3] = 6 * 0.125f;
  const Bytes gq = quantize(DType::mxfp4, g.data(), 32);
  EXPECT_EQ(gq[0], 127 - 3);
  expect_values(dequantize(DType::mxfp4, gq, 32), g);
}

// q4_K, q5_K and q6_K: no grid (their scales are 6- and 8-bit codes of fp16 super-block scales), so
// bounds: on uniform data every value within one quantization step of its sub-block (a step of its range
// over 15 for q4_K, 31 for q5_K, of its largest magnitude over 32 for q6_K), and the RMS error near half
// of that over sqrt 3.
TEST(QuantRoundTrip, Q4_KAndQ5_KWithinAStepOfTheirSubBlock) {
  for (const auto& [t, levels] : {std::pair{DType::q4_K, 15}, std::pair{DType::q5_K, 31}})
  for (float offset : {0.0f, 0.7f, -0.7f}) {  // mixed signs, then mostly positive, mostly negative
    SCOPED_TRACE(vkgmm::dtype_name(t));
    V x = random_values(256 * 16, 6, 1.0f);
    for (float& v : x) v += offset;
    const Bytes q = quantize(t, x.data(), x.size());
    const V y = dequantize(t, q, x.size());
    double sse = 0, step_sum = 0;
    for (size_t s = 0; s < x.size() / 32; ++s) {
      float lo = 0, hi = x[s * 32];
      for (int j = 0; j < 32; ++j) lo = std::min(lo, x[s * 32 + j]), hi = std::max(hi, x[s * 32 + j]);
      const float step = (hi - lo) / static_cast<float>(levels);
      step_sum += step;
      for (int j = 0; j < 32; ++j) {
        const float err = std::fabs(y[s * 32 + j] - x[s * 32 + j]);
        EXPECT_LE(err, step) << s << " " << j;
        sse += double(err) * err;
      }
    }
    const double rms = std::sqrt(sse / x.size()), mean_step = step_sum / (x.size() / 32);
    EXPECT_LT(rms, 0.4 * mean_step) << offset;  // uniform rounding alone: step / sqrt(12) = 0.29 step
  }
}

TEST(QuantRoundTrip, Q6_KWithinAStepOfItsSubBlock) {
  const V x = random_values(256 * 16, 7, 2.0f);
  const Bytes q = quantize(DType::q6_K, x.data(), x.size());
  const V y = dequantize(DType::q6_K, q, x.size());
  double sse = 0, step_sum = 0;
  for (size_t s = 0; s < x.size() / 16; ++s) {
    float amax = 0;
    for (int j = 0; j < 16; ++j) amax = std::max(amax, std::fabs(x[s * 16 + j]));
    const float step = amax / 32;
    step_sum += step;
    for (int j = 0; j < 16; ++j) {
      const float err = std::fabs(y[s * 16 + j] - x[s * 16 + j]);
      EXPECT_LE(err, step) << s << " " << j;
      sse += double(err) * err;
    }
  }
  EXPECT_LT(std::sqrt(sse / x.size()), 0.4 * step_sum / (x.size() / 16));
}

TEST(QuantRoundTrip, ExtremesStayFiniteAndSigned) {
  for (DType t : kFormats) {
    const uint64_t count = vkgmm::block_elements(t);
    for (float big : {1e-30f, 0.5f, 1.0f, 6e4f, 1e7f}) {
      // Half the block at +big, half at -big (alternating), and one block all at -big.
      V x(count), neg(count, -big);
      for (uint64_t i = 0; i < count; ++i) x[i] = i % 2 ? -big : big;
      for (const V* in : {&x, &neg}) {
        const V y = dequantize(t, quantize(t, in->data(), count), count);
        for (uint64_t i = 0; i < count; ++i) {
          ASSERT_TRUE(std::isfinite(y[i])) << vkgmm::dtype_name(t) << " " << big;
          // Each value keeps its sign, or becomes 0 when the scale underflows (1e-30 in the fp16 scales).
          EXPECT_GE(y[i] * (*in)[i], 0.0f) << vkgmm::dtype_name(t) << " " << big << " " << i;
          if (big >= 0.5f && big <= 6e4f) {
            // Where the fp16 scales are normal numbers the extremes come back to a few parts in a thousand;
            // q4_0 to one step (big / 8) on the side opposite the block's first extreme (pinned above), and
            // mxfp4, whose levels are 2 bits deep, to a quarter.
            // q5_0 likewise to big / 16, and iq4_nl and iq4_xs, whose top level is 113 / 127 of their
            // bottom one, to 14 / 127 of big.
            const float tol = t == DType::q4_0   ? big / 8 * 1.01f
                              : t == DType::q5_0 ? big / 16 * 1.01f
                              : t == DType::mxfp4 ? big / 4
                              : t == DType::iq4_nl || t == DType::iq4_xs ? big * 14 / 127 * 1.01f
                                                   : big * 4e-3f;
            EXPECT_NEAR(y[i], (*in)[i], tol) << vkgmm::dtype_name(t) << " " << big << " " << i;
          }
        }
      }
    }
  }
  // Past the fp16 range (q8_0: amax / 127 > 65504) the scale saturates at 65504 instead of becoming
  // infinity: the extreme is 127 * 65504.
  V x(32, 1e7f);
  const V y = dequantize(DType::q8_0, quantize(DType::q8_0, x.data(), 32), 32);
  EXPECT_EQ(y[0], 127.0f * 65504.0f);
}

// Blocks of tiny values, whose scales fall below fp16's normal range (or its smallest step): every format
// comes back no further than zeros would, and where the smallest fp16 step can still reach the values
// (std 1e-5 and above) much nearer: a super-block scale that rounds to 0 beside a nonzero min scale would
// give every value -dmin * m, further than zeros.
TEST(QuantRoundTrip, TinyBlocksAreNoFurtherThanZeros) {
  std::mt19937 rng(17);
  for (DType t : kFormats) {
    const uint64_t count = 8 * 256;
    for (double sd : {1e-4, 1e-5, 3e-6, 1e-6, 1e-9}) {
      std::normal_distribution<double> normal(0.0, sd);
      V x(count);
      for (float& v : x) v = static_cast<float>(normal(rng));
      const V y = dequantize(t, quantize(t, x.data(), count), count);
      double err = 0, zeros = 0;
      for (uint64_t i = 0; i < count; ++i) err += double(y[i] - x[i]) * (y[i] - x[i]), zeros += double(x[i]) * x[i];
      const double relative = std::sqrt(err / zeros);
      EXPECT_LE(relative, 1.0) << vkgmm::dtype_name(t) << " std " << sd;
      if (sd >= 1e-5) EXPECT_LT(relative, 0.75) << vkgmm::dtype_name(t) << " std " << sd;
    }
  }
}

// ---- against ggml's reference quantizers (re-implemented from ggml-quants.c: same arithmetic) ---------

// quantize_row_q8_0_ref: d = amax / 127 stored as fp16; q = roundf(x * (1 / d)) with the unrounded d.
Bytes ggml_q8_0(const V& x) {
  Bytes out(x.size() / 32 * 34);
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const float* v = &x[b * 32];
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(v[j]));
    const float d = amax / 127, id = d ? 1.0f / d : 0.0f;
    const uint16_t h = vkgmm::f32_to_f16(d);
    out[b * 34] = h & 0xFF, out[b * 34 + 1] = h >> 8;
    for (int j = 0; j < 32; ++j) out[b * 34 + 2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(v[j] * id)));
  }
  return out;
}

// quantize_row_q4_0_ref: max = the first value of largest magnitude, d = max / -8 (fp16), code =
// min(15, (int8)(x / d + 8.5)): low nibbles the first 16 values.
Bytes ggml_q4_0(const V& x) {
  Bytes out(x.size() / 32 * 18, 0);
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const float* v = &x[b * 32];
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j)
      if (amax < std::fabs(v[j])) amax = std::fabs(v[j]), max = v[j];
    const float d = max / -8, id = d ? 1.0f / d : 0.0f;
    const uint16_t h = vkgmm::f32_to_f16(d);
    out[b * 18] = h & 0xFF, out[b * 18 + 1] = h >> 8;
    for (int j = 0; j < 16; ++j) {
      const int lo = std::min(15, int(static_cast<int8_t>(v[j] * id + 8.5f)));
      const int hi = std::min(15, int(static_cast<int8_t>(v[j + 16] * id + 8.5f)));
      out[b * 18 + 2 + j] = static_cast<uint8_t>(lo | hi << 4);
    }
  }
  return out;
}

// quantize_row_mxfp4_ref: e = floor(log2f(amax)) - 2 + 127 (0 for a zero block), each value the first
// nearest of kvalues * 2^(e - 128).
Bytes ggml_mxfp4(const V& x) {
  static const int8_t kv[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  Bytes out(x.size() / 32 * 17, 0);
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const float* v = &x[b * 32];
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(v[j]));
    const uint8_t e = amax > 0 ? static_cast<uint8_t>(std::floor(std::log2(amax)) - 2 + 127) : 0;
    const float d = std::ldexp(1.0f, int(e) - 128);
    out[b * 17] = e;
    for (int j = 0; j < 32; ++j) {
      int best = 0;
      float best_err = std::fabs(kv[0] * d - v[j]);
      for (int i = 1; i < 16; ++i)
        if (std::fabs(kv[i] * d - v[j]) < best_err) best = i, best_err = std::fabs(kv[i] * d - v[j]);
      out[b * 17 + 1 + j % 16] |= static_cast<uint8_t>(best << (j < 16 ? 0 : 4));
    }
  }
  return out;
}

// Data the comparison runs on: uniform, normal, and normal with rare large outliers, at several scales.
std::vector<V> comparison_data() {
  std::vector<V> sets;
  std::mt19937 rng(11);
  const size_t count = 32 * 4096;
  for (float scale : {1e-3f, 1.0f, 300.0f}) {
    V u(count), g(count), o(count);
    std::uniform_real_distribution<float> uni(-scale, scale);
    std::normal_distribution<float> nor(0, scale);
    std::uniform_int_distribution<int> pick(0, 99);
    for (size_t i = 0; i < count; ++i) {
      u[i] = uni(rng);
      g[i] = nor(rng);
      o[i] = nor(rng) * (pick(rng) == 0 ? 20.0f : 1.0f);
    }
    sets.push_back(u), sets.push_back(g), sets.push_back(o);
  }
  return sets;
}

double rms(const V& a, const V& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(s / a.size());
}

TEST(QuantVsGgml, Q8_0AndQ4_0EveryValueAtLeastAsClose) {
  for (DType t : {DType::q8_0, DType::q4_0}) {
    double ours_total = 0, ggml_total = 0;
    size_t better = 0, n = 0;
    for (const V& x : comparison_data()) {
      const V ours = dequantize(t, quantize(t, x.data(), x.size()), x.size());
      const V ref = dequantize(t, t == DType::q8_0 ? ggml_q8_0(x) : ggml_q4_0(x), x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        const float eo = std::fabs(ours[i] - x[i]), eg = std::fabs(ref[i] - x[i]);
        ASSERT_LE(eo, eg) << vkgmm::dtype_name(t) << " value " << i << " = " << x[i];
        better += eo < eg;
      }
      n += x.size();
      ours_total += rms(ours, x) / rms(ref, x);
      ggml_total += 1;
    }
    std::printf("%s: mean rms(ours) / rms(ggml ref) over %zu sets = %.6f; %zu of %zu values strictly closer\n",
                vkgmm::dtype_name(t), comparison_data().size(), ours_total / ggml_total, better, n);
  }
}

TEST(QuantVsGgml, Mxfp4EveryBlockAtLeastAsClose) {
  double ratio_sum = 0;
  size_t sets = 0, better_blocks = 0, blocks = 0;
  for (const V& x : comparison_data()) {
    const V ours = dequantize(DType::mxfp4, quantize(DType::mxfp4, x.data(), x.size()), x.size());
    const V ref = dequantize(DType::mxfp4, ggml_mxfp4(x), x.size());
    for (size_t b = 0; b < x.size() / 32; ++b) {
      double so = 0, sg = 0;
      for (size_t i = b * 32; i < b * 32 + 32; ++i) {
        // In double, as the quantizer sums it, so that equal blocks compare equal.
        const double dor = double(ours[i]) - x[i], dg = double(ref[i]) - x[i];
        so += dor * dor;
        sg += dg * dg;
      }
      ASSERT_LE(so, sg) << "block " << b;
      better_blocks += so < sg;
      ++blocks;
    }
    ratio_sum += rms(ours, x) / rms(ref, x);
    ++sets;
  }
  std::printf("mxfp4: mean rms(ours) / rms(ggml ref) over %zu sets = %.6f; %zu of %zu blocks strictly closer\n", sets,
              ratio_sum / sets, better_blocks, blocks);
}

// ---- the CPU reference with quantized weights ---------------------------------------------------------

TEST(QuantReference, QuantizedRhsIsItsDequantizedFloats) {
  // gmm with rhs_type q4_0 and transpose_rhs reads rhs as the floats the blocks hold: the same result as
  // rhs_type f32 on those floats; and the backward runs (d_rhs in f32).
  const int64_t m = 5, k = 64, n = 3;
  vkgmm::GmmProblem p;
  p.m = m, p.k = k, p.n = n;
  p.group_sizes = {2, 3};
  p.transpose_rhs = true;
  const V w = random_values(2 * n * k, 8);
  const Bytes q = quantize(DType::q4_0, w.data(), w.size());
  const V rhs = vkgmm::quant::dequantize_experts(DType::q4_0, q.data(), 2, n, k);
  const V lhs = random_values(m * k, 9);
  const V want = vkgmm::reference::gmm(p, lhs, rhs);
  p.rhs_type = DType::q4_0;
  expect_values(vkgmm::reference::gmm(p, lhs, rhs), want);
  const auto g = vkgmm::reference::gmm_backward(p, lhs, rhs, random_values(m * n, 10));
  EXPECT_EQ(g.d_lhs.size(), size_t(m * k));
  EXPECT_EQ(g.d_rhs.size(), size_t(2 * n * k));
}

}  // namespace
