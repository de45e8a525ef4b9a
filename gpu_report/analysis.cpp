#include "analysis.hpp"

#include "interface.hpp"
#include "shader_modules.hpp"

namespace gpu_report {

namespace {

std::string module_name(const vkgmm::PlannedPipeline& p) {
  for (const vkgmm::EmbeddedModule& m : vkgmm::embedded_op_modules())
    if (m.code.code == p.code.code) return m.name;
  // The metadata build (whose given-routing variant is a role of its own) and the combine have one module
  // each, named as their role.
  const std::string role = p.role;
  return role.rfind("metadata", 0) == 0 ? "metadata" : role;
}

// The constants the pipeline's module family declares (shaders/interface.h's names), with their values.
std::vector<Analysis::Constant> named_constants(const vkgmm::PlannedPipeline& p, const std::string& module) {
  std::vector<vkgmm::abi::SpecConstant> declared;
  const std::string role = p.role;
  if (role.rfind("metadata", 0) == 0) {
    declared.assign(std::begin(vkgmm::abi::kMetadataConstants), std::end(vkgmm::abi::kMetadataConstants));
  } else if (role == "combine") {
    declared.assign(std::begin(vkgmm::abi::kCombineConstants), std::end(vkgmm::abi::kCombineConstants));
  } else {
    declared.assign(std::begin(vkgmm::abi::kCommonConstants), std::end(vkgmm::abi::kCommonConstants));
    if (module.rfind("tgmm", 0) == 0)
      declared.insert(declared.end(), std::begin(vkgmm::abi::kTgmmConstants), std::end(vkgmm::abi::kTgmmConstants));
    else
      declared.insert(declared.end(), std::begin(vkgmm::abi::kGmmConstants), std::end(vkgmm::abi::kGmmConstants));
    if (p.split) declared.push_back(vkgmm::abi::kSplitConstant);
    if (module.find("matrix") != std::string::npos)
      declared.insert(declared.end(), std::begin(vkgmm::abi::kMatrixConstants), std::end(vkgmm::abi::kMatrixConstants));
  }
  std::vector<Analysis::Constant> out;
  for (const vkgmm::abi::SpecConstant& c : declared)
    out.push_back({c.id, c.name ? c.name : "local_size_x", c.id < p.constants.size() ? p.constants[c.id] : 0});
  return out;
}

}  // namespace

Analysis analyse(VkDevice device, const vkgmm::PlannedPipeline& p, bool executables) {
  Analysis a;
  a.module = module_name(p);
  a.role = p.role;
  a.split = p.split;
  a.constants = named_constants(p, a.module);
  if (!executables) return a;
  const std::vector<Executable> ex = read_executables(device, p.pipeline);
  if (ex.empty()) return a;
  const Executable& e = ex.front();  // a compute pipeline has one
  a.statistics = !e.statistics.empty();
  a.wave_size = e.subgroup_size;
  a.all_statistics = e.statistics;
  a.vgprs = e.statistic("VGPRs");
  a.sgprs = e.statistic("SGPRs");
  a.spilled_vgprs = e.statistic("Spilled VGPRs");
  a.spilled_sgprs = e.statistic("Spilled SGPRs");
  a.lds = e.statistic("LDS size");
  a.waves = e.statistic("Subgroups per SIMD");
  a.code_size = e.statistic("Code size");
  a.scratch = e.statistic("Scratch size");
  a.disassembly = e.representation("Assembly");
  if (!a.disassembly.empty()) a.mix = main_loop_mix(parse_disassembly(a.disassembly));
  return a;
}

}  // namespace gpu_report
