// f32 <-> f16 / bf16 on the host, bit-exact and independent of the compiler's _Float16 support.
//
// Narrowing rounds to nearest, ties to even (what the GPU's conversions and JAX's astype do); widening is
// exact. NaNs stay NaN and come out quiet, infinities stay infinite, magnitudes past the f16 range become
// infinity, f16 subnormals are produced and read (no flush to zero), and the sign of zero is kept.
#include "vkgmm/convert.hpp"

#include <bit>
#include <cstring>
#include <string>

namespace vkgmm {
namespace {

static_assert(std::endian::native == std::endian::little,
              "encode/decode write the buffers' little-endian layout with memcpy");

// Rounds q + r / 2^shift to an integer, ties to even; r holds the shift bits dropped from q.
uint32_t round_shifted(uint32_t q, uint32_t r, int shift) {
  const uint32_t half = 1u << (shift - 1);
  if (r > half || (r == half && (q & 1u))) ++q;
  return q;
}

}  // namespace

uint16_t f32_to_f16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t exp = (bits >> 23) & 0xFFu;
  const uint32_t mant = bits & 0x7FFFFFu;

  if (exp == 0xFFu) {
    if (mant == 0) return sign | 0x7C00u;  // infinity
    // Keep the top payload bits and force the quiet bit so a NaN never turns into infinity.
    return static_cast<uint16_t>(sign | 0x7C00u | 0x0200u | (mant >> 13));
  }
  // f32 zeros and subnormals (< 2^-126) are far below half the smallest f16 subnormal (2^-25).
  if (exp == 0) return sign;

  const int e = static_cast<int>(exp) - 127;  // unbiased exponent
  if (e > 15) return sign | 0x7C00u;          // >= 2^16: past f16 max even before rounding

  if (e >= -14) {
    // f16 normal: 10 mantissa bits kept, 13 rounded away. A carry out of the mantissa bumps the
    // exponent, which is exactly right, including the step from 65504 up to infinity.
    const uint32_t q = (static_cast<uint32_t>(e + 15) << 10) | (mant >> 13);
    return static_cast<uint16_t>(sign | round_shifted(q, mant & 0x1FFFu, 13));
  }

  // f16 subnormal: the value is sig * 2^(e-23) and a subnormal unit is 2^-24, so shift sig right by
  // -(e + 1). Beyond 24 bits of shift the value is below 2^-25 (half a unit) and rounds to zero.
  const int shift = -(e + 1);  // >= 14 here
  if (shift > 24) return sign;
  const uint32_t sig = mant | 0x800000u;
  const uint32_t q = sig >> shift;
  const uint32_t r = sig & ((1u << shift) - 1u);
  // Rounding up to 0x400 yields the smallest normal, whose encoding is the next integer: no special case.
  return static_cast<uint16_t>(sign | round_shifted(q, r, shift));
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;

  if (exp == 0x1Fu) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));  // inf / NaN
  if (exp == 0) {
    if (mant == 0) return std::bit_cast<float>(sign);
    // Subnormal: normalise so the leading one becomes the implicit bit of an f32 normal.
    int e = -14;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    mant &= 0x3FFu;
    return std::bit_cast<float>(sign | (static_cast<uint32_t>(e + 127) << 23) | (mant << 13));
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));  // rebias 15 -> 127
}

uint16_t f32_to_bf16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  // NaN first: rounding could carry a NaN with a low-only payload into infinity.
  if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x7FFFFFu) != 0)
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  // Same exponent range as f32, so only the low 16 bits are rounded away. A carry into the exponent is
  // correct, and rounding past the largest finite value lands exactly on infinity's encoding.
  const uint32_t lsb = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7FFFu + lsb) >> 16);
}

float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

float round_to(DType t, float x) {
  switch (t) {
    case DType::f32: return x;
    case DType::f16: return f16_to_f32(f32_to_f16(x));
    case DType::bf16: return bf16_to_f32(f32_to_bf16(x));
    default: break;
  }
  // Block formats have no per-value rounding: a value is whatever its block encodes.
  throw Error(Status::invalid_argument, std::string("round_to: ") + dtype_name(t) + " is not an element type");
}

std::vector<uint8_t> encode(DType t, const std::vector<float>& values) {
  std::vector<uint8_t> out(values.size() * dtype_size(t));
  for (size_t i = 0; i < values.size(); ++i) {
    if (t == DType::f32) {
      std::memcpy(out.data() + 4 * i, &values[i], 4);
    } else {
      const uint16_t h = t == DType::f16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

std::vector<float> decode(DType t, const void* bytes, size_t count) {
  const size_t size = dtype_size(t);  // throws on an unknown type before anything is read
  // memcpy per element: a mapped buffer at an element-aligned offset need not be aligned for float.
  const auto* p = static_cast<const uint8_t*>(bytes);
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) {
    if (t == DType::f32) {
      std::memcpy(&out[i], p + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, p + size * i, 2);
      out[i] = t == DType::f16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
  }
  return out;
}

}  // namespace vkgmm
