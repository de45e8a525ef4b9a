// Turning a TilingChoice into the kernel shape that runs (internal).
#pragma once

#include <vector>

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

// The rows of the active groups, for gmm's automatic choice of the m tile.
struct ActiveGroups {
  const std::vector<int32_t>* sizes = nullptr;  // all G groups
  int64_t offset = 0, count = 0;
};

// How the operands are laid out, for the automatic tiling: gmm's rhs [k, n] (not transposed), tgmm's
// lhs [m, k] (lhs_mk).
struct OperandLayout {
  bool rhs_rows_contiguous = false;
  bool lhs_mk = false;
};

// The tiling the caller asked for (tuple, lookup or automatic), checked positive. `op` names the op in
// errors ("gmm" / "tgmm"). With `groups`, gmm's automatic tiling picks the m tile that computes the
// fewest rows in all (see pick_tm), and with rhs [k, n] the n tile that streams whole weight rows when
// visits are a few rows each (decode).
Tiling resolve_tiling(const TilingChoice& choice, int64_t m, int64_t k, int64_t n, Schedule schedule,
                      const char* op, const ActiveGroups& groups = {}, OperandLayout layout = {});

// The m tile (a power of two from `smallest` to `largest`) that minimises the estimated cost of gmm's
// visits (make_gmm_visits: ceil(rows / tm) per group), each costing tm rows plus a fixed overhead of
// `overhead` rows' worth (loading the group's weights); ties go to the smaller tile.
int64_t pick_tm(const ActiveGroups& groups, int64_t smallest, int64_t largest, int64_t overhead);

Schedule resolve_schedule(Schedule requested, const DeviceInfo& info);

// $VKGMM_DISABLE_VEC4=1: the direct schedule uses scalar loads only (to test that path on shapes where
// 4-element loads would be chosen).
bool vec4_disabled();

// rows/cols: the output block; step: the reduction step; extents: the problem's sizes along each, used to
// shrink tiles larger than the problem (to a power of two, so pipelines stay few). col_group / row_group:
// columns / rows an invocation owns side by side (4 for vec4 loads along them, else 1); RN / RM is a
// multiple of it.
KernelShape make_kernel_shape(int64_t rows, int64_t step, int64_t cols, int64_t rows_extent, int64_t step_extent,
                              int64_t cols_extent, Schedule schedule, const DeviceInfo& info, const char* op,
                              uint32_t col_group = 1, uint32_t row_group = 1);

}  // namespace vkgmm
