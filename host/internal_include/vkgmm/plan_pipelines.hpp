// What vkgmm's own tools (`vkgmm gpu-report`) read of a plan's pipelines and of the library's SPIR-V
// modules, so that they include none of host/'s headers. Internal (host/internal_include/, not installed,
// not exported): the functions are in the library's objects, which the tools link.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vkgmm/ops.hpp"
#include "vkgmm/top_k.hpp"

namespace vkgmm {
// A Context whose plans compile their pipelines and nothing else (ResolvedOptions::compile_only): no
// device memory, no submission; for drivers that can compile but not run, such as RADV's null device
// (RADV_FORCE_FAMILY). Buffers, record() and submit_and_wait() are refused with Status::unsupported.
Context open_compile_only(const ContextOptions& options);
}  // namespace vkgmm

namespace vkgmm::internals {

struct PipelineConstant {
  uint32_t id;
  std::string name;  // the shader's (shaders/interface.h); "local_size_x" for the workgroup size
  uint32_t value;
};

// One pipeline a plan made and records.
struct PlanPipeline {
  // Which dispatch: "op", "metadata", "combine", "metadata given" (the metadata build that takes
  // another plan's routing, which a routed plan compiles beside its own), "grad" (the routed backward's
  // gradient pass), "top_k" or "top_k backward".
  std::string role;
  std::string module;  // its SPIR-V module (spirv_modules()'s name): gmm, gmm_s16, tgmm_split, metadata, ...
  std::vector<PipelineConstant> constants;  // every constant the module declares, as the pipeline sets it
  bool split = false;   // the split layout (operands bound in parts), else the plain one
  bool matrix = false;  // the matrix schedule: its main loop is matrix instructions, not FMAs
  // The op's pass: 0, or a later one in dispatch order (gmm's tile heights per group: where skewed
  // groups take tiles of their own heights, each height after the first is a pass of its own).
  uint32_t pass = 0;
  VkPipeline pipeline = VK_NULL_HANDLE;
};

// The pipelines record() binds, in dispatch order, then a routed plan's "metadata given".
std::vector<PlanPipeline> plan_pipelines(const GmmPlan& plan);
std::vector<PlanPipeline> plan_pipelines(const TgmmPlan& plan);
// Top-k routing's one pipeline (role "top_k", "top_k backward"); none for a problem without tokens.
std::vector<PlanPipeline> plan_pipelines(const TopKPlan& plan);
std::vector<PlanPipeline> plan_pipelines(const TopKBackwardPlan& plan);

// A part of the backward with its pipelines in dispatch order.
struct PlanPart {
  // "d_lhs", "d_rhs"; a routed forward's (or one with an epilogue) also "forward" (the product recomputed,
  // saving its pre-activation) and "grad" (the epilogue's gradient pass, role "grad"), and with a bias
  // and a local expert "d_bias".
  std::string part;
  std::optional<Tiling> tiling;  // its plan's; none for the gradient pass, which has no plan of its own
  std::vector<PlanPipeline> pipelines;
};
// The backward's parts in dispatch order (a part the forward has none of is left out).
std::vector<PlanPart> plan_parts(const GmmBackwardPlan& plan);

// Every SPIR-V module the plans' pipelines come from: each op module, the metadata build, the combine,
// the routed backward's gradient pass and top-k's two.
struct SpirvModule {
  std::string name;
  const uint32_t* code;
  size_t words;
};
std::vector<SpirvModule> spirv_modules();

// Whether the context's device gives its pipelines' statistics and disassembly
// (VK_KHR_pipeline_executable_properties, enabled by vkgmm where present).
bool reads_executable_properties(const Context& ctx);

}  // namespace vkgmm::internals
