// The pipeline cache: one VkPipeline per (shader, specialization constants), created on first use.
#include "context_impl.hpp"

namespace vkgmm {

VkPipeline Context::Impl::pipeline(const uint32_t* code, size_t words, const std::vector<uint32_t>& constants,
                                   bool split) {
  PipelineKey key{code, constants};
  std::lock_guard lock(pipelines_mutex);
  if (auto it = pipelines.find(key); it != pipelines.end()) return it->second;

  VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smi.codeSize = words * sizeof(uint32_t);
  smi.pCode = code;
  VkShaderModule module = VK_NULL_HANDLE;
  check_vk(vkCreateShaderModule(device, &smi, nullptr, &module), "vkCreateShaderModule");

  std::vector<VkSpecializationMapEntry> entries(constants.size());
  for (uint32_t i = 0; i < constants.size(); ++i) entries[i] = {i, i * 4u, 4};
  VkSpecializationInfo spec{};
  spec.mapEntryCount = static_cast<uint32_t>(entries.size());
  spec.pMapEntries = entries.data();
  spec.dataSize = constants.size() * 4;
  spec.pData = constants.data();

  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = &spec;
  ci.layout = split ? split_pipeline_layout : pipeline_layout;
  VkPipeline p = VK_NULL_HANDLE;
  VkResult r = vkCreateComputePipelines(device, pipeline_cache, 1, &ci, nullptr, &p);
  vkDestroyShaderModule(device, module, nullptr);
  check_vk(r, "vkCreateComputePipelines");
  pipelines.emplace(std::move(key), p);
  return p;
}

}  // namespace vkgmm
