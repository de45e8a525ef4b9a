// What the block-format codec tests (test_quant_formats.cpp, test_quant_low_bits.cpp) share: a block's
// fp16 fields, random blocks' scales, bit-for-bit comparison and random weights.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "vkgmm/convert.hpp"
#include "vkgmm/types.hpp"

namespace vkgmm::test::blocks {

using Bytes = std::vector<uint8_t>;
using V = std::vector<float>;

inline float half(const uint8_t* p) { return f16_to_f32(uint16_t(p[0] | p[1] << 8)); }
inline void put(uint8_t* p, uint16_t h) { p[0] = uint8_t(h & 0xFF), p[1] = uint8_t(h >> 8); }

// Random finite fp16 bits: any sign, mantissa and exponent but the all-ones one (infinity, NaN).
inline uint16_t random_half(std::mt19937& rng) {
  uint16_t h = uint16_t(rng());
  if ((h & 0x7C00u) == 0x7C00u) h = uint16_t(h & ~0x4000u);
  return h;
}

inline void expect_same_bits(const V& got, const V& want, DType t) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4), std::memcpy(&b, &want[i], 4);
    ASSERT_EQ(a, b) << dtype_name(t) << " value " << i << ": " << got[i] << " vs " << want[i];
  }
}

// count normal values of deviation `scale`, the same for the same seed.
inline V normal_values(size_t count, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nor(0, scale);
  V x(count);
  for (auto& v : x) v = nor(rng);
  return x;
}

}  // namespace vkgmm::test::blocks
