// The embedded SPIR-V modules and which one a plan uses (internal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "op.hpp"
#include "vkgmm/context.hpp"

namespace vkgmm {

struct ShaderCode {
  const uint32_t* code;
  size_t words;
};

// The 16-bit-storage build is used: some operand is 16-bit, the device has storageBuffer16BitAccess, and
// `storage16` (ContextOptions::storage16) allows it.
bool use_storage16(const DeviceInfo& info, bool storage16, bool any_16bit_operand);

// The module for `op`: with `split`, the build that binds operands in parts (packed 32-bit access);
// else the 16-bit-storage build when some operand is 16-bit, the device has storageBuffer16BitAccess
// and `storage16` (ContextOptions::storage16) allows it; else the packed 32-bit build. With
// `subgroup_slices` (gmm), that build's form that sums K slices with subgroup shuffles. With `blocks` (gmm),
// the build for rhs in a block format (VKGMM_BLOCK_RHS), the only one that decodes blocks.
ShaderCode shader_for(Op op, const DeviceInfo& info, bool storage16, bool any_16bit_operand, bool split,
                      bool subgroup_slices = false, bool blocks = false);
// The same module with lhs and rhs read through texel views (VKGMM_TEXEL; never split).
ShaderCode texel_shader_for(Op op, const DeviceInfo& info, bool storage16, bool any_16bit_operand, bool blocks = false);
// gmm's matrix build for the extension the device's matrix units were enabled with
// (DeviceInfo::matrix_extension); throws Error(unsupported) where there is none.
ShaderCode matrix_shader_for(Op op, const DeviceInfo& info, bool blocks = false);
ShaderCode fma_ceiling_shader();
// The read-bandwidth probe (shaders/read_ceiling.comp): through the texel view or the storage binding,
// reduced with subgroup arithmetic or in shared memory.
ShaderCode read_ceiling_shader(bool texel, bool subgroup_reduce);
// The device metadata build (shaders/metadata.comp).
ShaderCode metadata_shader();
// The ordered combine of slots routed by expert ids (shaders/combine.comp).
ShaderCode combine_shader();
// Top-k routing of router logits (shaders/topk.comp).
ShaderCode topk_shader();
// Its gradient to the logits (shaders/topk_grad.comp).
ShaderCode topk_grad_shader();
// The routed backward's epilogue gradient (shaders/routed_grad.comp).
ShaderCode routed_grad_shader();

// Every embedded module of the plans' ops, by the name cmake/shaders.cmake gave it, with what it is
// built for (its constants and layout): for tools and tests that look at all of them.
struct EmbeddedModule {
  const char* name;
  Op op;
  bool split;   // the VKGMM_SPLIT build: the split layout, and PART_SHIFT
  bool matrix;  // a VKGMM_MATRIX build: kMatrixConstants
  bool blocks;  // a VKGMM_BLOCK_RHS build: rhs in a block format
  ShaderCode code;
};
std::vector<EmbeddedModule> embedded_op_modules();

}  // namespace vkgmm
