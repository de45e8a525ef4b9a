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
  uint32_t vec4_id = 0;             // constant_id of the shader's VEC4 switch
  bool split = false;               // the module and layout bind operands in parts
  VkPipeline pipeline = VK_NULL_HANDLE;

  // Sets PART_SHIFT for split kernels and creates (or finds) the pipeline.
  void create(Context::Impl& ctx, VkDeviceSize part_bytes);
  // The planned pipeline; when it uses 4-element loads but the operands' offsets are not 4-element
  // aligned, the same kernel with scalar loads.
  VkPipeline for_offsets(Context::Impl& ctx, bool offsets_vec4_aligned) const;
};

}  // namespace vkgmm
