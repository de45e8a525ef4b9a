// The plans' pipelines as vkgmm's tools name them (vkgmm/plan_pipelines.hpp).
#include "vkgmm/plan_pipelines.hpp"

#include <iterator>

#include "context_impl.hpp"
#include "interface.hpp"
#include "plan_internals.hpp"
#include "shader_modules.hpp"

namespace vkgmm::internals {

namespace {

std::string module_name(const PlannedPipeline& p) {
  for (const EmbeddedModule& m : embedded_op_modules())
    if (m.code.code == p.code.code) return m.name;
  // The metadata build (whose given-routing variant is a role of its own) and the combine have one
  // module each, named as their role.
  const std::string role = p.role;
  return role.rfind("metadata", 0) == 0 ? "metadata" : role;
}

// The constants the pipeline's module family declares (shaders/interface.h's names), with their values.
std::vector<PipelineConstant> named_constants(const PlannedPipeline& p, const std::string& module) {
  std::vector<abi::SpecConstant> declared;
  auto add = [&](const auto& list) { declared.insert(declared.end(), std::begin(list), std::end(list)); };
  const std::string role = p.role;
  if (role.rfind("metadata", 0) == 0) {
    add(abi::kMetadataConstants);
  } else if (role == "combine") {
    add(abi::kCombineConstants);
  } else {
    add(abi::kCommonConstants);
    if (module.rfind("tgmm", 0) == 0)
      add(abi::kTgmmConstants);
    else
      add(abi::kGmmConstants);
    if (p.split) declared.push_back(abi::kSplitConstant);
    if (module.find("matrix") != std::string::npos) add(abi::kMatrixConstants);
  }
  std::vector<PipelineConstant> out;
  for (const abi::SpecConstant& c : declared)
    out.push_back({c.id, c.name ? c.name : "local_size_x", c.id < p.constants.size() ? p.constants[c.id] : 0});
  return out;
}

std::vector<PlanPipeline> named(const std::vector<PlannedPipeline>& planned) {
  std::vector<PlanPipeline> out;
  for (const PlannedPipeline& p : planned) {
    PlanPipeline n;
    n.role = p.role;
    n.module = module_name(p);
    n.constants = named_constants(p, n.module);
    n.split = p.split;
    n.matrix = p.constants.size() > VKGMM_ID_MATRIX_M && p.constants[VKGMM_ID_MATRIX_M] != 0;
    n.pipeline = p.pipeline;
    n.pass = p.pass;
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace

std::vector<PlanPipeline> plan_pipelines(const GmmPlan& plan) { return named(PlanInternals::pipelines(plan)); }
std::vector<PlanPipeline> plan_pipelines(const TgmmPlan& plan) { return named(PlanInternals::pipelines(plan)); }

std::vector<SpirvModule> spirv_modules() {
  std::vector<SpirvModule> out;
  for (const EmbeddedModule& m : embedded_op_modules()) out.push_back({m.name, m.code.code, m.code.words});
  for (const auto& [name, code] : {std::pair{"metadata", metadata_shader()}, {"combine", combine_shader()}})
    out.push_back({name, code.code, code.words});
  return out;
}

bool reads_executable_properties(const Context& ctx) {
  return ContextInternals::of(ctx).dev.executable_properties;
}

}  // namespace vkgmm::internals
