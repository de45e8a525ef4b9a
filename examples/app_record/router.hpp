// The app's own compute pass that writes the group sizes on the device (count_rows.comp, compiled by
// the build): an engine's router would do this. vkgmm is not involved.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>

namespace app {

class CountRows {
 public:
  explicit CountRows(VkDevice device);
  CountRows(const CountRows&) = delete;
  CountRows& operator=(const CountRows&) = delete;
  ~CountRows();

  // Records the dispatch: group_sizes[e] += the rows r < rows with experts[r] == e (e < groups). Reads
  // `experts` (int32 [rows]) and adds to `group_sizes` (int32 [groups], zeroed by the caller) in
  // COMPUTE_SHADER, as SHADER_READ and SHADER_READ | SHADER_WRITE. Can be recorded once per CountRows
  // (one descriptor set).
  void record(VkCommandBuffer cb, VkDescriptorBufferInfo experts, VkDescriptorBufferInfo group_sizes, uint32_t rows,
              uint32_t groups);

 private:
  void destroy() noexcept;

  VkDevice device_;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  VkDescriptorSet set_ = VK_NULL_HANDLE;
};

}  // namespace app
