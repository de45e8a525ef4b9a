// A reduction split over work items (internal): tgmm's skewed groups, with host metadata. The kernel
// stores each chunk of a split group's rows as an fp32 partial sum in out's layout, `chunks` slots per
// split group, into the workspace (VKGMM_BINDING_TGMM_PARTIAL); then the plan core records one ordered
// combine (shaders/combine.comp) per run of consecutive split groups, which sums each group's slots in
// order, + existing_out, into out. The workspace holds the slots only.
#pragma once

#include <cstdint>
#include <vector>

namespace vkgmm {

struct SplitReduction {
  uint32_t chunks = 0;          // slots per split group
  uint32_t group_elements = 0;  // elements of one output group (k * n)
  struct Run {
    uint32_t first_group = 0, groups = 0, first_slot = 0;  // output groups, and the first one's first slot
  };
  std::vector<Run> runs;
  uint64_t slots() const {
    uint64_t n = 0;
    for (const Run& r : runs) n += uint64_t(r.groups) * chunks;
    return n;
  }
  uint64_t words() const { return slots() * group_elements; }
};

}  // namespace vkgmm
