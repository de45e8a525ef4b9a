// A planned kernel: its module, specialization constants and pipeline, shared by the plans (internal).
#pragma once

#include <vector>

#include "context_impl.hpp"
#include "shader_modules.hpp"

namespace vkgmm {

// Specialization constant ids both op shaders share (see shaders/bindings.glsl for PART_SHIFT).
constexpr uint32_t kPartShiftId = 31;

struct Kernel {
  ShaderCode code{};
  std::vector<uint32_t> constants;  // constants[id] is constant_id id
  // The shader's 4-element-load switches: VEC4 (needs rhs, and with vec4_needs_lhs also lhs, 4-element
  // aligned) and optionally VEC4_LHS (needs lhs aligned, and VEC4 on). 0: the shader has none.
  uint32_t vec4_id = 0;
  bool vec4_needs_lhs = false;
  uint32_t vec4_lhs_id = 0;
  bool vec4_lhs_any_offset = false;  // VEC4_LHS aligns its own loads (tgmm's lhs [k, m]): any offset will do
  bool split = false;               // the module and layout bind operands in parts
  VkPipeline pipeline = VK_NULL_HANDLE;  // null until first needed when there is a texel pipeline
  // The VKGMM_TEXEL build of the module (null code: none) and its pipeline with the same constants.
  ShaderCode texel_code{};
  VkPipeline texel_pipeline = VK_NULL_HANDLE;

  // Picks `code` (and `texel_code` where the inputs can be read through texel views) for op with these
  // element types; `split` must be set first.
  void choose_modules(Op op, const DeviceInfo& info, DType lhs, DType rhs, DType out);
  // Sets PART_SHIFT for split kernels and creates (or finds) the pipelines.
  void create(Context::Impl& ctx, VkDeviceSize part_bytes);
  // The planned pipeline (the texel one with `texel`); where it uses 4-element loads of an operand whose
  // offset (in elements, as pushed) is not a multiple of 4, the same kernel with those loads scalar.
  VkPipeline for_offsets(Context::Impl& ctx, uint32_t lhs_offset, uint32_t rhs_offset, bool texel = false) const;
};

}  // namespace vkgmm
