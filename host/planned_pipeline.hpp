// A pipeline a plan made and records (internal): what a tool needs to name it and compile it again.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "shader_modules.hpp"
#include "vkgmm/types.hpp"

namespace vkgmm {

// Which dispatch (`role`: "op", "metadata", "combine", "metadata given": the metadata build that takes
// another plan's routing, "grad": the routed backward's gradient pass, "top_k", "top_k backward"), its
// module, specialization constants (constants[i] is constant_id i) and layout (split).
struct PlannedPipeline {
  const char* role;
  ShaderCode code;
  std::vector<uint32_t> constants;
  bool split;
  VkPipeline pipeline;
  // The op's pass: 0, or a later one (gmm's tile heights per group: 1, 2, ... in dispatch order).
  uint32_t pass = 0;
};

// A part of a composite plan (the backward's d_lhs, d_rhs, the routed backward's recompute, d_bias and
// gradient pass) with its pipelines in dispatch order.
struct PlannedPart {
  const char* part;
  std::optional<Tiling> tiling;  // its plan's (none: a pass with no plan of its own)
  std::vector<PlannedPipeline> pipelines;
};

}  // namespace vkgmm
