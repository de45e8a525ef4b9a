// A pipeline a plan made and records (internal): what a tool needs to name it and compile it again.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <vector>

#include "shader_modules.hpp"

namespace vkgmm {

// Which dispatch (`role`: "op", "metadata", "combine", or "metadata given": the metadata build that takes
// another plan's routing), its module, specialization constants (constants[i] is constant_id i) and
// layout (split).
struct PlannedPipeline {
  const char* role;
  ShaderCode code;
  std::vector<uint32_t> constants;
  bool split;
  VkPipeline pipeline;
  // The op's pass: 0, or a later one (gmm's tile heights per group: 1, 2, ... in dispatch order).
  uint32_t pass = 0;
};

}  // namespace vkgmm
