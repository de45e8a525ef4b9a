// The loop iterations of the plan core's own dispatches, the metadata build with its routing prologue
// and the combine, for the CPU drivers' loop budget (tiling.hpp, check_cpu_loop_budget) (internal).
#pragma once

#include <cstdint>
#include <string>

#include "plan_core.hpp"

namespace vkgmm {

// A bound on one invocation's loop iterations, and what drives it: `what` names the argument whose term
// is the largest, `remedy` what the caller can do about it.
struct LoopCount {
  uint64_t iterations = 0;
  std::string what;
  const char* remedy = "";
};

// The metadata build's busiest invocation (shaders/metadata.comp, with routing shaders/routing.glsl):
// invocation 0, which takes a full chunk of every chunked loop and runs the scans. `routing` may be null.
LoopCount metadata_build_loops(const PlanCore::DeviceMetadata& d, const PlanCore::Routing* routing);

// The combine's (shaders/combine.comp): each invocation's columns of out_n, `columns` workgroups of
// VKGMM_COMBINE_INVOCATIONS apart, each summing top_k slots.
LoopCount combine_loops(uint32_t top_k, uint32_t out_n, uint32_t columns);

}  // namespace vkgmm
