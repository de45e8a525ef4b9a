// How vkgmm's own tools reach what a plan made (internal; the public headers name no internal type), as
// ContextInternals does for a Context's parts.
#pragma once

#include <vector>

#include <vulkan/vulkan.h>

#include "planned_pipeline.hpp"
#include "vkgmm/ops.hpp"

namespace vkgmm {

struct PlanInternals {
  // The pipelines record() binds, in dispatch order (DispatchPlan::pipelines).
  static std::vector<PlannedPipeline> pipelines(const GmmPlan& plan);   // host/gmm_plan.cpp
  static std::vector<PlannedPipeline> pipelines(const TgmmPlan& plan);  // host/tgmm_plan.cpp
  // Where a routed gmm's metadata build leaves the row map and the local experts' counts, in words of its
  // workspace (the group offsets lead it, from word 0).
  struct RoutingWords {
    uint64_t map = 0, sizes = 0;
  };
  static RoutingWords routing_words(const GmmPlan& plan);  // host/gmm_plan.cpp
  // Records only a routed plan's routing build (and its barrier): the row map and counts another pass
  // reads, the product not needed.
  static void record_routing(const GmmPlan& plan, VkCommandBuffer cb, const GmmOperands& ops);
};

}  // namespace vkgmm
