// A routed plan's routing as other passes over the same slots take it (internal): the MoE layer's
// projections and the routed backward's passes share one build instead of each ordering the slots again.
#pragma once

#include <cstdint>

#include "vkgmm/context.hpp"

namespace vkgmm {

// The words a routed gmm's metadata build wrote for its ids: `words` is its workspace from word 0 (the
// group offsets, G_local + 1 of them) to the end of the row map; `sizes` and `map` are word offsets in it
// (the local experts' counts, the slot of each row). Another routed plan takes them only for the same
// slots: tokens, top_k, window and experts all equal (PlanCore checks).
struct RoutingSource {
  BufferView words;
  uint64_t sizes = 0, map = 0;
  uint32_t tokens = 0, top_k = 0, group_offset = 0, num_local = 0, num_experts = 0;
};

}  // namespace vkgmm
