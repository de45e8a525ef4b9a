// Host-side conversions between f32 and the 16-bit element types (round to nearest even).
#pragma once

#include <cstdint>
#include <vector>

#include "vkgmm/types.hpp"

namespace vkgmm {

VKGMM_API uint16_t f32_to_f16(float x);
VKGMM_API float f16_to_f32(uint16_t h);
VKGMM_API uint16_t f32_to_bf16(float x);
VKGMM_API float bf16_to_f32(uint16_t h);

// The value x becomes when stored as type t.
VKGMM_API float round_to(DType t, float x);

// Pack floats into the bytes of type t, and back.
VKGMM_API std::vector<uint8_t> encode(DType t, const std::vector<float>& values);
VKGMM_API std::vector<float> decode(DType t, const void* bytes, size_t count);

}  // namespace vkgmm
