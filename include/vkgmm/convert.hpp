// Host-side conversions between f32 and the 16-bit element types (round to nearest even).
#pragma once

#include <cstdint>
#include <vector>

#include "vkgmm/types.hpp"

namespace vkgmm {

uint16_t f32_to_f16(float x);
float f16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float x);
float bf16_to_f32(uint16_t h);

// The value x becomes when stored as type t.
float round_to(DType t, float x);

// Pack floats into the bytes of type t, and back.
std::vector<uint8_t> encode(DType t, const std::vector<float>& values);
std::vector<float> decode(DType t, const void* bytes, size_t count);

}  // namespace vkgmm
