#include "executables.hpp"

#include <cctype>

#include <stdexcept>

namespace gpu_report {

double Executable::statistic(const std::string& want) const {
  for (const auto& [n, v] : statistics)
    if (n == want) return v;
  return -1;
}

std::string Executable::representation(const std::string& part) const {
  auto lower = [](std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  for (const auto& [n, text] : representations)
    if (lower(n).find(lower(part)) != std::string::npos) return text;
  return "";
}

namespace {

template <class Fn>
Fn device_fn(VkDevice device, const char* name) {
  auto f = reinterpret_cast<Fn>(vkGetDeviceProcAddr(device, name));
  if (!f) throw std::runtime_error(std::string(name) + " is not available (VK_KHR_pipeline_executable_properties)");
  return f;
}

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) throw std::runtime_error(std::string(what) + " failed (" + std::to_string(r) + ")");
}

double value_of(const VkPipelineExecutableStatisticKHR& s) {
  switch (s.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: return s.value.b32;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: return double(s.value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: return double(s.value.u64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: return s.value.f64;
    default: return 0;
  }
}

}  // namespace

std::vector<Executable> read_executables(VkDevice device, VkPipeline pipeline) {
  auto properties = device_fn<PFN_vkGetPipelineExecutablePropertiesKHR>(device, "vkGetPipelineExecutablePropertiesKHR");
  auto statistics = device_fn<PFN_vkGetPipelineExecutableStatisticsKHR>(device, "vkGetPipelineExecutableStatisticsKHR");
  auto representations = device_fn<PFN_vkGetPipelineExecutableInternalRepresentationsKHR>(
      device, "vkGetPipelineExecutableInternalRepresentationsKHR");
  VkPipelineInfoKHR pi{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  pi.pipeline = pipeline;
  uint32_t count = 0;
  check(properties(device, &pi, &count, nullptr), "vkGetPipelineExecutablePropertiesKHR");
  std::vector<VkPipelineExecutablePropertiesKHR> props(count, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  check(properties(device, &pi, &count, props.data()), "vkGetPipelineExecutablePropertiesKHR");
  std::vector<Executable> out;
  for (uint32_t e = 0; e < count; ++e) {
    Executable x;
    x.name = props[e].name;
    x.description = props[e].description;
    x.subgroup_size = props[e].subgroupSize;
    VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    ei.pipeline = pipeline;
    ei.executableIndex = e;
    uint32_t ns = 0;
    check(statistics(device, &ei, &ns, nullptr), "vkGetPipelineExecutableStatisticsKHR");
    std::vector<VkPipelineExecutableStatisticKHR> stats(ns, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    check(statistics(device, &ei, &ns, stats.data()), "vkGetPipelineExecutableStatisticsKHR");
    for (const auto& s : stats) x.statistics.emplace_back(s.name, value_of(s));
    // Sizes first, then the texts into buffers of those sizes.
    uint32_t nr = 0;
    check(representations(device, &ei, &nr, nullptr), "vkGetPipelineExecutableInternalRepresentationsKHR");
    std::vector<VkPipelineExecutableInternalRepresentationKHR> reps(
        nr, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR});
    check(representations(device, &ei, &nr, reps.data()), "vkGetPipelineExecutableInternalRepresentationsKHR");
    std::vector<std::string> texts(nr);
    for (uint32_t r = 0; r < nr; ++r) {
      texts[r].assign(reps[r].dataSize, '\0');
      reps[r].pData = texts[r].data();
    }
    check(representations(device, &ei, &nr, reps.data()), "vkGetPipelineExecutableInternalRepresentationsKHR");
    for (uint32_t r = 0; r < nr; ++r) {
      std::string t = texts[r];
      if (!t.empty() && t.back() == '\0') t.pop_back();
      x.representations.emplace_back(reps[r].name, t);
    }
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace gpu_report
