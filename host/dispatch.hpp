// One dispatch a plan records (internal): its pipeline, descriptors, push constants, grid or indirect
// command, and the barrier that orders it after the commands before it. The grouped ops' plan core
// records its metadata build, kernel and combine as dispatches; top_k records one.
#pragma once

#include <algorithm>
#include <iterator>
#include <type_traits>

#include "context_impl.hpp"
#include "interface.hpp"
#include "pipeline_cache.hpp"

namespace vkgmm {

// A push-constant block: one of shaders/interface.h's push structs, as words.
struct PushBlock {
  uint32_t words[abi::kPushConstantBytes / 4] = {};
  uint32_t bytes = 0;
  // The block made a zeroed Push (its size the block's): fill its fields in place.
  template <class Push>
  Push& start() {
    static_assert(sizeof(Push) <= sizeof(words) && sizeof(Push) % 4 == 0 && std::is_trivially_copyable_v<Push>);
    std::fill(std::begin(words), std::end(words), 0u);
    bytes = sizeof(Push);
    return *reinterpret_cast<Push*>(words);
  }
  // The block's leading fields as a Push (a struct the block's own begins with: the operand offsets).
  template <class Push>
  Push& as() {
    static_assert(sizeof(Push) <= sizeof(words) && std::is_trivially_copyable_v<Push>);
    return *reinterpret_cast<Push*>(words);
  }
  template <class Push>
  const Push& as() const {
    static_assert(sizeof(Push) <= sizeof(words) && std::is_trivially_copyable_v<Push>);
    return *reinterpret_cast<const Push*>(words);
  }
};

// Dependency of the commands before on the commands after, for these accesses: compute to compute, plus
// the extra pipeline stages given on either side (the indirect command read: DRAW_INDIRECT).
void compute_barrier(VkCommandBuffer cb, VkAccessFlags before, VkAccessFlags after,
                     VkPipelineStageFlags extra_before = 0, VkPipelineStageFlags extra_after = 0);

struct Dispatch {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkDescriptorBufferInfo infos[kNumSplitBindings]{};
  uint32_t count = 0;  // descriptors in infos: kNumBindings (the plain layout) or kNumSplitBindings
  PushBlock push;
  // The inputs' texel views, pushed with the plain layout's descriptors for a texel build.
  bool texel = false;
  VkBufferView texels[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};
  // The route bindings (gmm's module declares them: every gmm dispatch pushes them), when `routes`.
  bool routes = false;
  VkDescriptorBufferInfo route[kNumRouteBindings]{};
  uint32_t grid[3] = {0, 0, 0};
  VkBuffer indirect_buffer = VK_NULL_HANDLE;  // set: vkCmdDispatchIndirect with the command there
  VkDeviceSize indirect_offset = 0;
  // The barrier before it: the accesses of earlier commands it waits for, its own, and extra pipeline
  // pipeline stages on either side. No access at all: no barrier.
  VkAccessFlags wait_for = 0, before_own = 0;
  VkPipelineStageFlags extra_before = 0, extra_after = 0;

  // Every binding of the plain layout set to `info` (the module's unused bindings need a valid one).
  void bind_all(const VkDescriptorBufferInfo& info);
  void record(Context::Impl& ctx, VkCommandBuffer cb) const;
};

}  // namespace vkgmm
