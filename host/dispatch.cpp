#include "dispatch.hpp"

#include <algorithm>

#include "operands.hpp"

namespace vkgmm {

void compute_barrier(VkCommandBuffer cb, VkAccessFlags before, VkAccessFlags after, VkPipelineStageFlags extra_before,
                     VkPipelineStageFlags extra_after) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = before;
  mb.dstAccessMask = after;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | extra_before,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | extra_after, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

void Dispatch::bind_all(const VkDescriptorBufferInfo& info) {
  std::fill(infos, infos + kNumBindings, info);
  count = kNumBindings;
}

void Dispatch::record(Context::Impl& ctx, VkCommandBuffer cb) const {
  if (wait_for || before_own) compute_barrier(cb, wait_for, before_own, extra_before, extra_after);
  bind_and_push(ctx, cb, pipeline, infos, count, push.words, push.bytes, texel ? texels : nullptr,
                routes ? route : nullptr);
  if (indirect_buffer) vkCmdDispatchIndirect(cb, indirect_buffer, indirect_offset);
  else vkCmdDispatch(cb, grid[0], grid[1], grid[2]);
}

}  // namespace vkgmm
