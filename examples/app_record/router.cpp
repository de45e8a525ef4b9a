// count_rows.comp as a pipeline with an ordinary descriptor set (the app's way, not vkgmm's).
#include "router.hpp"

#include "app_device.hpp"

namespace app {

namespace {

// The SPIR-V of count_rows.comp: glslc -mfmt=num at build time (CMakeLists.txt, Makefile).
const uint32_t kCountRowsSpirv[] = {
#include "count_rows.spv.inc"
};

}  // namespace

CountRows::CountRows(VkDevice device) : device_(device) {
  try {
    VkDescriptorSetLayoutBinding bindings[2] = {};
    for (uint32_t i = 0; i < 2; ++i) {
      bindings[i].binding = i;
      bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      bindings[i].descriptorCount = 1;
      bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo sli{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    sli.bindingCount = 2;
    sli.pBindings = bindings;
    vk(vkCreateDescriptorSetLayout(device_, &sli, nullptr, &set_layout_), "vkCreateDescriptorSetLayout");

    const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, 2 * sizeof(uint32_t)};
    VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pli.setLayoutCount = 1;
    pli.pSetLayouts = &set_layout_;
    pli.pushConstantRangeCount = 1;
    pli.pPushConstantRanges = &push;
    vk(vkCreatePipelineLayout(device_, &pli, nullptr, &layout_), "vkCreatePipelineLayout");

    VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    smi.codeSize = sizeof kCountRowsSpirv;
    smi.pCode = kCountRowsSpirv;
    VkShaderModule module = VK_NULL_HANDLE;
    vk(vkCreateShaderModule(device_, &smi, nullptr, &module), "vkCreateShaderModule");
    VkComputePipelineCreateInfo cpi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cpi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cpi.stage.module = module;
    cpi.stage.pName = "main";
    cpi.layout = layout_;
    const VkResult r = vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &cpi, nullptr, &pipeline_);
    vkDestroyShaderModule(device_, module, nullptr);
    vk(r, "vkCreateComputePipelines");

    const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
    VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpi.maxSets = 1;
    dpi.poolSizeCount = 1;
    dpi.pPoolSizes = &size;
    vk(vkCreateDescriptorPool(device_, &dpi, nullptr, &pool_), "vkCreateDescriptorPool");
    VkDescriptorSetAllocateInfo dsai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    dsai.descriptorPool = pool_;
    dsai.descriptorSetCount = 1;
    dsai.pSetLayouts = &set_layout_;
    vk(vkAllocateDescriptorSets(device_, &dsai, &set_), "vkAllocateDescriptorSets");
  } catch (...) {
    destroy();
    throw;
  }
}

CountRows::~CountRows() { destroy(); }

void CountRows::destroy() noexcept {
  if (pool_) vkDestroyDescriptorPool(device_, pool_, nullptr);
  if (pipeline_) vkDestroyPipeline(device_, pipeline_, nullptr);
  if (layout_) vkDestroyPipelineLayout(device_, layout_, nullptr);
  if (set_layout_) vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
}

void CountRows::record(VkCommandBuffer cb, VkDescriptorBufferInfo experts, VkDescriptorBufferInfo group_sizes,
                       uint32_t rows, uint32_t groups) {
  VkWriteDescriptorSet writes[2] = {};
  const VkDescriptorBufferInfo* infos[2] = {&experts, &group_sizes};
  for (uint32_t i = 0; i < 2; ++i) {
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = set_;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = infos[i];
  }
  vkUpdateDescriptorSets(device_, 2, writes, 0, nullptr);
  const uint32_t push[2] = {rows, groups};
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
  vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &set_, 0, nullptr);
  vkCmdPushConstants(cb, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, push);
  vkCmdDispatch(cb, (rows + 63) / 64, 1, 1);
}

}  // namespace app
