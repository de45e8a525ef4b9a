// The one place a gmm or tgmm plan's kernel is chosen: the schedule and the kernel shape that runs, from the request, the device and the context's options (internal).
//
// It reads its arguments (the caller's tiling lookup included) and the device class's row
// (host/device_class.hpp), nothing else of the world, so a test can pin what any device description gets
// (tests/test_kernel_choice.cpp).
#pragma once

#include <string>
#include <utility>

#include "gmm_tile_heights.hpp"
#include "op.hpp"
#include "options.hpp"
#include "tiling.hpp"

namespace vkgmm {

// What a plan asks of its kernel, in the kernel's terms.
//  gmm: an output block of rows x cols (the kernel's rows: the problem's, or routed the slots; cols the
//    output columns), reduced over k; tgmm: an output block of k x n per group, reduced over the group's m
//    rows.
struct KernelRequest {
  KernelRequest() = default;
  // What every op asks: the rest is the op's own, set after.
  KernelRequest(Op op_, Schedule requested_, const TilingChoice* tiling_, int64_t m_, int64_t k_, int64_t n_,
                std::string matrix_refusal_, bool vec4_)
      : op(op_), requested(requested_), tiling(tiling_), m(m_), k(k_), n(n_),
        matrix_refusal(std::move(matrix_refusal_)), vec4(vec4_) {}

  Op op = Op::gmm;
  Schedule requested = Schedule::automatic;  // the problem's schedule
  const TilingChoice* tiling = nullptr;      // the problem's tiling (null: automatic)
  int64_t m = 0, k = 0, n = 0;               // gmm: rows, k, output columns; tgmm: m, k, n
  // Why the call cannot run on the matrix units (matrix_schedule.hpp's matrix_refusal; empty: it can).
  std::string matrix_refusal;
  // 4-element loads: gmm's along K (and N, unless rhs is transposed); tgmm's along N.
  bool vec4 = false;
  // gmm:
  ActiveGroups groups;            // the rows of each active group (expected ones where they are on the device)
  bool rhs_rows_contiguous = false;  // rhs [k, n]
  bool rhs_blocks = false;           // rhs in a block format
  uint32_t halves = 1;               // product columns per output column (2: a gated activation)
  KWalkStep k_walk;                  // the direct schedule's walk along K (k_walk_step)
  // On a GPU's shared and matrix schedules, with the tiling automatic, the groups may take tile heights of
  // their own (gmm_tile_heights.hpp). With `groups_expected` (sizes on the device: `groups` are an estimate)
  // the metadata build divides each group's rows among the heights: the first pass takes the range's largest
  // height (the whole tiles), the estimate only says whether to take the passes, and where they are not
  // taken the tile stays the work's pick.
  bool heights_per_group = false;
  bool groups_expected = false;
  // > 0, with the tiling automatic: the most columns per tile (a call whose few rows each take all their
  // tiles in one workgroup, gmm's slots routed in the kernel, spreads its columns over more workgroups).
  int64_t most_cols = 0;
  // tgmm:
  bool lhs_mk = false;         // lhs stored [m, k]
  bool vec4_lhs_rows = false;  // lhs [m, k] read 4 of the block's k rows at a time
};

struct KernelChoice {
  Op op = Op::gmm;
  Schedule schedule = Schedule::automatic;  // the schedule the kernel runs (never automatic)
  // What runs: the tiling asked for (the caller's or the automatic one) shrunk to the problem and mapped
  // on invocations.
  KernelShape shape;
  // gmm's tile heights per group, where the request allows them and they pay: the heights, each the rows of
  // its shape (the first `shape`, the others `later_shapes` in the same order). Empty: every group in `shape`.
  GmmTileHeights heights;
  std::vector<KernelShape> later_shapes;
  // The tiling the plan reports (GmmPlan::tiling, TgmmPlan::tiling): the shape's, as (tm, tk, tn).
  Tiling tiling() const;
};

// `info` is the device that runs the kernel (its matrix units and limits); `tiling_info` the one the
// schedule and tiles are chosen for (info, unless a test plans as another device: tiling_device.hpp).
// Throws Error(invalid_argument) on a tiling that cannot run, Error(unsupported) where the matrix schedule
// was asked of a call that cannot take it.
KernelChoice choose_kernel(const KernelRequest& request, const DeviceInfo& info, const DeviceInfo& tiling_info,
                           const ResolvedOptions& options);

}  // namespace vkgmm
