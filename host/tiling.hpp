// Turning a TilingChoice into the kernel shape that runs (internal).
#pragma once

#include "vkgmm/context.hpp"
#include "vkgmm/types.hpp"

namespace vkgmm {

// A kernel's output block [rows, cols], reduced `step` at a time, and how invocations cover the block:
// TX x TY invocations, each holding RM x RN fp32 accumulators.
struct KernelShape {
  uint32_t rows = 0, step = 0, cols = 0;
  uint32_t tx = 0, ty = 0, rm = 0, rn = 0;
  bool use_shared = false;
  uint32_t shared_a = 1, shared_b = 1;  // shared array lengths (1 when unused)
  uint32_t invocations() const { return tx * ty; }
};

// The tiling the caller asked for (tuple, lookup or automatic), checked positive. `op` names the op in
// errors ("gmm" / "tgmm"). rows_per_group: the mean rows of the non-empty active groups (gmm's automatic
// tiling sizes its m tile to it, so small groups do not compute whole tiles of other groups' rows).
Tiling resolve_tiling(const TilingChoice& choice, int64_t m, int64_t k, int64_t n, Schedule schedule,
                      const char* op, int64_t rows_per_group = 0);

Schedule resolve_schedule(Schedule requested, const DeviceInfo& info);

// $VKGMM_DISABLE_VEC4=1: the direct schedule uses scalar loads only (to test that path on shapes where
// 4-element loads would be chosen).
bool vec4_disabled();

// rows/cols: the output block; step: the reduction step; extents: the problem's sizes along each, used to
// shrink tiles larger than the problem (to a power of two, so pipelines stay few). col_group: columns an
// invocation owns side by side (4 for vec4 loads along the columns, else 1); RN is a multiple of it.
KernelShape make_kernel_shape(int64_t rows, int64_t step, int64_t cols, int64_t rows_extent, int64_t step_extent,
                              int64_t cols_extent, Schedule schedule, const DeviceInfo& info, const char* op,
                              uint32_t col_group = 1);

}  // namespace vkgmm
