// The pipeline cache: the descriptor layouts, and one VkPipeline per (shader, specialization
// constants), created on first use.
#include "pipeline_cache.hpp"

#include "device.hpp"
#include "interface.hpp"

namespace vkgmm {

void PipelineCache::init(VkDevice device, VkPipelineCreateFlags flags, bool reverse_subgroups,
                         uint32_t subgroup_size) {
  flags_ = flags;
  reverse_subgroup_size_ = reverse_subgroups ? subgroup_size : 0;
  // Two layouts, both pushed with vkCmdPushDescriptorSetKHR: the plain one (storage buffers and the
  // inputs' texel views) and the split one of storage buffers for operands bound in parts
  // (kNumSplitBindings + kNumRouteBindings must stay within maxPushDescriptors, >= 32), each ending with
  // the route bindings.
  auto make_layouts = [&](bool split, VkDescriptorSetLayout& set, VkPipelineLayout& layout) {
    VkDescriptorSetLayoutBinding bindings[kNumSplitBindings + kNumRouteBindings];
    uint32_t count = 0;
    for (uint32_t b = 0; b < kRouteWeights + kNumRouteBindings; ++b)
      if (layout_has_binding(b, split))
        bindings[count++] = {b, binding_type(b, split), 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo sl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    sl.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    sl.bindingCount = count;
    sl.pBindings = bindings;
    check_created(vkCreateDescriptorSetLayout(device, &sl, nullptr, &set), set, "vkCreateDescriptorSetLayout");
    VkPushConstantRange pc{VK_SHADER_STAGE_COMPUTE_BIT, 0, abi::kPushConstantBytes};
    VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &set;
    pl.pushConstantRangeCount = 1;
    pl.pPushConstantRanges = &pc;
    check_created(vkCreatePipelineLayout(device, &pl, nullptr, &layout), layout, "vkCreatePipelineLayout");
  };
  make_layouts(false, set_layout_, layout_);
  make_layouts(true, split_set_layout_, split_layout_);
  VkPipelineCacheCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  check_created(vkCreatePipelineCache(device, &pci, nullptr, &cache_), cache_, "vkCreatePipelineCache");
}


void PipelineCache::destroy(VkDevice device) {
  for (auto& [key, p] : pipelines_) vkDestroyPipeline(device, p, nullptr);
  pipelines_.clear();
  if (cache_) vkDestroyPipelineCache(device, cache_, nullptr);
  if (layout_) vkDestroyPipelineLayout(device, layout_, nullptr);
  if (set_layout_) vkDestroyDescriptorSetLayout(device, set_layout_, nullptr);
  if (split_layout_) vkDestroyPipelineLayout(device, split_layout_, nullptr);
  if (split_set_layout_) vkDestroyDescriptorSetLayout(device, split_set_layout_, nullptr);
}

VkPipeline PipelineCache::get(VkDevice device, const uint32_t* code, size_t words,
                              const std::vector<uint32_t>& constants, bool split, MatrixSubgroup subgroup) {
  Key key{code, constants, subgroup};
  {
    std::lock_guard lock(mutex_);
    if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;
  }
  // Compiled outside the lock (a driver takes up to seconds), so that other threads' lookups of compiled
  // pipelines do not wait; VkPipelineCache synchronizes itself. Of two threads compiling the same pipeline,
  // the first to store it wins and the other's is destroyed.
  const VkPipeline p = create(device, code, words, constants, split, subgroup);
  std::lock_guard lock(mutex_);
  const auto [it, stored] = pipelines_.emplace(std::move(key), p);
  if (!stored) vkDestroyPipeline(device, p, nullptr);
  return it->second;
}

VkPipeline PipelineCache::create(VkDevice device, const uint32_t* code, size_t words,
                                 const std::vector<uint32_t>& constants, bool split, MatrixSubgroup subgroup) const {
  VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smi.codeSize = words * sizeof(uint32_t);
  smi.pCode = code;
  VkShaderModule module = VK_NULL_HANDLE;
  check_created(vkCreateShaderModule(device, &smi, nullptr, &module), module, "vkCreateShaderModule");

  std::vector<uint32_t> values = constants;
  std::vector<VkSpecializationMapEntry> entries(values.size());
  for (uint32_t i = 0; i < values.size(); ++i) entries[i] = {i, i * 4u, 4};
  // After the module's own constants, whose ids stay below it (abi::kMaxModuleConstantId), where the
  // workgroup (local_size_x_id, every module's) is whole subgroups.
  if (reverse_subgroup_size_ && !values.empty() && values[VKGMM_ID_INVOCATIONS] % reverse_subgroup_size_ == 0) {
    entries.push_back({VKGMM_ID_REVERSE_SUBGROUPS, uint32_t(values.size() * 4u), 4});
    values.push_back(1u);
  }
  VkSpecializationInfo spec{};
  spec.mapEntryCount = static_cast<uint32_t>(entries.size());
  spec.pMapEntries = entries.data();
  spec.dataSize = values.size() * 4;
  spec.pData = values.data();

  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = &spec;
  VkPipelineShaderStageRequiredSubgroupSizeCreateInfoEXT size{
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO_EXT};
  if (subgroup.required) {
    size.requiredSubgroupSize = subgroup.size;
    ci.stage.pNext = &size;
  }
  if (subgroup.full) ci.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT_EXT;
  ci.flags = flags_;
  ci.layout = layout(split);
  VkPipeline p = VK_NULL_HANDLE;
  VkResult r = vkCreateComputePipelines(device, cache_, 1, &ci, nullptr, &p);
  vkDestroyShaderModule(device, module, nullptr);
  check_vk(r, "vkCreateComputePipelines");
  return p;
}

}  // namespace vkgmm
