// How vkgmm's own tools reach a plan's core (internal; the public headers name no internal type), as
// ContextInternals does for a Context's parts.
#pragma once

#include "dispatch_plan.hpp"
#include "vkgmm/ops.hpp"

namespace vkgmm {

struct PlanInternals {
  static const DispatchPlan& core(const GmmPlan& plan);   // host/gmm_plan.cpp
  static const DispatchPlan& core(const TgmmPlan& plan);  // host/tgmm_plan.cpp
};

}  // namespace vkgmm
