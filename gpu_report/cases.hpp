// The workloads `vkgmm gpu-report` compiles: the bench's presets in every element type, rhs transposed or
// not, the backward (routed ones whole), tgmm, routing by ids with and without the epilogues, top-k
// routing and its backward, and the block formats; each planned by vkgmm's own plans on a compile-only
// context, so the pipelines are the ones a run would use.
#pragma once

#include <string>
#include <vector>

#include "vkgmm/context.hpp"
#include "vkgmm/plan_pipelines.hpp"

namespace gpu_report {

// One pipeline of a case: which plan or pass made it ("gmm", "tgmm", "top_k", "top_k backward", or the
// backward's part: "d_lhs", "d_rhs", "forward", "grad", "d_bias"; gmm's later passes add " pass N") and
// the pipeline.
struct CasePipeline {
  std::string plan;
  std::string tiling;  // the tiling the plan runs, "tm,tk,tn" ("" for a pass with none: grad, top-k)
  vkgmm::internals::PlanPipeline pipeline;
};

struct Case {
  std::string name;   // preset and variant, e.g. "moe-prefill bf16 rhsT" (rhs [G, n, k])
  std::string shape;  // m, k, n, G (ids: T, k, n, E, top_k; top-k: T, E, top_k)
  // Decode-sized: a few rows per expert (fewer than 16 on average), so the weights' bandwidth bounds it,
  // not the FMAs: reported apart, outside the FMA-share target.
  bool decode = false;
  bool quantized = false;  // block-format weights: dequantization is part of the inner loop
  std::vector<CasePipeline> pipelines;
  std::string error;  // the plan refused the case on this device (then no pipelines)
};

// Every case, planned on `ctx` (a compile-only context: vkgmm's internal open_compile_only). `only`:
// the cases whose name contains it ("" for all).
std::vector<Case> plan_cases(vkgmm::Context& ctx, const std::string& only);

}  // namespace gpu_report
