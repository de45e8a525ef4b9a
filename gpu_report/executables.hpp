// What a driver's compiler made of a pipeline, through VK_KHR_pipeline_executable_properties: each
// executable's statistics (RADV/ACO: VGPRs, SGPRs, spills, LDS, waves per SIMD, code size, ...) and its
// internal representations (ACO's disassembly among them).
#pragma once

#include <vulkan/vulkan.h>

#include <string>
#include <utility>
#include <vector>

namespace gpu_report {

struct Executable {
  std::string name, description;
  uint32_t subgroup_size = 0;
  std::vector<std::pair<std::string, double>> statistics;       // in the driver's order and names
  std::vector<std::pair<std::string, std::string>> representations;  // name -> text
  // A statistic by name, or -1 when the driver gives none of that name.
  double statistic(const std::string& name) const;
  // The representation whose name contains `part` in any case (e.g. "assembly"), or "".
  std::string representation(const std::string& part) const;
};

// The pipeline's executables (one for a compute pipeline). The pipeline must have been created with the
// capture bits on a device with pipelineExecutableInfo enabled; throws std::runtime_error otherwise.
std::vector<Executable> read_executables(VkDevice device, VkPipeline pipeline);

}  // namespace gpu_report
