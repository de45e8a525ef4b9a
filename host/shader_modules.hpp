// The embedded SPIR-V modules and which one a plan uses (internal).
#pragma once

#include <cstddef>
#include <cstdint>

#include "vkgmm/context.hpp"

namespace vkgmm {

struct ShaderCode {
  const uint32_t* code;
  size_t words;
};

enum class Op { gmm, tgmm };

// The 16-bit-storage build: some operand is 16-bit, the device has storageBuffer16BitAccess, and
// $VKGMM_DISABLE_16BIT_STORAGE does not force the packed path. (Also what bind_operand asks to know
// whether a 16-bit operand is read in whole 32-bit words.)
bool use_storage16(const DeviceInfo& info, bool any_16bit_operand);

// The module for `op`: with `split`, the build that binds operands in parts (packed 32-bit access);
// else the 16-bit-storage build when some operand is 16-bit and the device has storageBuffer16BitAccess,
// unless $VKGMM_DISABLE_16BIT_STORAGE=1 forces the packed 32-bit path (so one device tests both).
ShaderCode shader_for(Op op, const DeviceInfo& info, bool any_16bit_operand, bool split);
// The same module with lhs and rhs read through texel views (VKGMM_TEXEL; never split).
ShaderCode texel_shader_for(Op op, const DeviceInfo& info, bool any_16bit_operand);
ShaderCode fma_ceiling_shader();

}  // namespace vkgmm
