// The plans' pipelines as vkgmm's tools name them (vkgmm/plan_pipelines.hpp).
#include "vkgmm/plan_pipelines.hpp"

#include <iterator>
#include <utility>

#include "context_impl.hpp"
#include "interface.hpp"
#include "plan_internals.hpp"
#include "shader_modules.hpp"

namespace vkgmm::internals {

namespace {

// The modules of one pipeline each (no build variants), by their spirv_modules() names.
std::vector<std::pair<const char*, ShaderCode>> single_modules() {
  return {{"metadata", metadata_shader()},   {"combine", combine_shader()}, {"routed_grad", routed_grad_shader()},
          {"topk", topk_shader()},           {"topk_grad", topk_grad_shader()}};
}

std::string module_name(const PlannedPipeline& p) {
  for (const EmbeddedModule& m : embedded_op_modules())
    if (m.code.code == p.code.code) return m.name;
  for (const auto& [name, code] : single_modules())
    if (code.code == p.code.code) return name;
  return p.role;
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
  } else if (role == "grad") {
    add(abi::kGradConstants);
  } else if (role == "top_k") {
    add(abi::kTopKConstants);
  } else if (role == "top_k backward") {
    add(abi::kTopKGradConstants);
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
std::vector<PlanPipeline> plan_pipelines(const TopKPlan& plan) { return named(PlanInternals::pipelines(plan)); }
std::vector<PlanPipeline> plan_pipelines(const TopKBackwardPlan& plan) {
  return named(PlanInternals::pipelines(plan));
}

std::vector<PlanPart> plan_parts(const GmmBackwardPlan& plan) {
  std::vector<PlanPart> out;
  for (const PlannedPart& p : PlanInternals::parts(plan)) out.push_back({p.part, p.tiling, named(p.pipelines)});
  return out;
}

std::vector<SpirvModule> spirv_modules() {
  std::vector<SpirvModule> out;
  for (const EmbeddedModule& m : embedded_op_modules()) out.push_back({m.name, m.code.code, m.code.words});
  for (const auto& [name, code] : single_modules()) out.push_back({name, code.code, code.words});
  return out;
}

bool reads_executable_properties(const Context& ctx) {
  return ContextInternals::of(ctx).dev.executable_properties;
}

}  // namespace vkgmm::internals
