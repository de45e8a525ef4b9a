#include "kernel_choice.hpp"

#include "device_class.hpp"

namespace vkgmm {

namespace {

// The schedule the kernel runs, from the one resolved for the problem: matrix where it was asked for or
// forced, or where automatic chose shared, the call can take it and the device's driver is trusted with it
// (DeviceInfo::matrix_automatic). Asked of the problem where the call cannot, throws Error(unsupported)
// with the refusal; forced on the context, such a call runs shared.
Schedule matrix_or_fallback(Schedule resolved, Schedule requested, Schedule forced, const std::string& refusal,
                            const DeviceInfo& info) {
  if (resolved == Schedule::matrix && !refusal.empty()) {
    if (requested == Schedule::matrix && forced == Schedule::automatic) throw Error(Status::unsupported, refusal);
    return Schedule::shared;
  }
  const bool automatic = requested == Schedule::automatic && forced == Schedule::automatic;
  if (resolved == Schedule::shared && automatic && refusal.empty() && info.matrix_automatic) return Schedule::matrix;
  return resolved;
}

const TilingChoice& tiling_of(const KernelRequest& r) {
  static const TilingChoice automatic{};
  return r.tiling ? *r.tiling : automatic;
}

// gmm's output block is [tm, tn], reduced over K tk at a time; a gated activation's output column needs two
// product columns (gate and up), two accumulator halves.
KernelChoice choose_gmm(const KernelRequest& r, const DeviceInfo& info, const DeviceInfo& tiling_info,
                        const ResolvedOptions& options) {
  const TilingChoice& tiling = tiling_of(r);
  KernelChoice c;
  c.schedule = gmm_schedule(r.requested, tiling_info, options.schedule, r.groups, !tiling.fixed && !tiling.lookup);
  c.schedule = matrix_or_fallback(c.schedule, r.requested, options.schedule, r.matrix_refusal, info);
  Tiling t = resolve_tiling(tiling, r.m, r.k, r.n, op_name(r.op), [&] {
    return gmm_auto_tiling(c.schedule, tiling_info, r.groups, r.rhs_rows_contiguous, r.n, r.halves, r.rhs_blocks);
  });
  if (r.most_cols > 0 && !tiling.fixed && !tiling.lookup) t.tn = std::min(t.tn, r.most_cols);
  auto shape_of = [&](int64_t tm) {
    return c.schedule == Schedule::matrix
               ? make_matrix_shape(tm, t.tk, t.tn, r.m, r.k, r.n, info, op_name(r.op), r.halves, r.rhs_blocks,
                                   options.stage_buffers)
               : make_kernel_shape(tm, t.tk, t.tn, r.m, r.k, r.n, c.schedule, tiling_info, op_name(r.op),
                                   r.vec4 ? 4 : 1, 1, r.halves, &r.k_walk, options.stage_buffers);
  };
  c.shape = shape_of(t.tm);
  const bool automatic = !tiling.fixed && !tiling.lookup;
  const bool gpu = tiling_info.type != VK_PHYSICAL_DEVICE_TYPE_CPU;
  if (r.heights_per_group && automatic && c.schedule != Schedule::direct && gpu) {
    const VisitSlots slots{(r.n + c.shape.cols - 1) / c.shape.cols, int64_t(tiling_info.compute_units)};
    // The largest height the block takes: Intel's matrix units keep fewer rows than the class's block.
    MTileRange range = gmm_m_tile_range(c.schedule, tiling_info);
    range.largest = std::min<int64_t>(range.largest, shape_of(range.largest).rows);
    c.heights = gmm_tile_heights(r.groups, range, slots);
    // Estimated sizes: the build gives each group whole tiles of the largest height, whichever heights the
    // estimate's remainders took.
    std::vector<int64_t>& h = c.heights.heights;
    if (r.groups_expected && h.size() >= 2 && h[0] != range.largest) h.insert(h.begin(), range.largest);
  }
  if (c.heights.heights.size() < 2) {
    // One height, by time (gmm_tile_heights), where it is not the work's pick (and the sizes are known).
    if (c.heights.heights.size() == 1 && c.heights.heights[0] != t.tm && !r.groups_expected)
      c.shape = shape_of(c.heights.heights[0]);
    c.heights = GmmTileHeights{};
    return c;
  }
  c.shape = shape_of(c.heights.heights[0]);
  for (size_t i = 1; i < c.heights.heights.size(); ++i) c.later_shapes.push_back(shape_of(c.heights.heights[i]));
  // The passes share the grid's n tiles, and each steps through its groups' rows by its height: a block
  // that would take other columns, or shrink its rows below the height, keeps one height.
  bool fits = c.shape.rows == c.heights.heights[0];
  for (size_t i = 0; i < c.later_shapes.size(); ++i)
    fits = fits && c.later_shapes[i].cols == c.shape.cols && c.later_shapes[i].rows == c.heights.heights[i + 1];
  if (!fits) {
    c.later_shapes.clear();
    // The one height by time, as where the passes do not pay (with estimated sizes the work's pick).
    c.shape = shape_of(r.groups_expected ? t.tm : c.heights.single);
    c.heights = GmmTileHeights{};
  }
  return c;
}

// tgmm's output block is [block_k, block_n] per group, reduced over the group's rows rows_per_step at a time.
KernelChoice choose_tgmm(const KernelRequest& r, const DeviceInfo& info, const DeviceInfo& tiling_info,
                         const ResolvedOptions& options) {
  KernelChoice c;
  c.schedule = matrix_or_fallback(resolve_schedule(r.requested, tiling_info, options.schedule), r.requested,
                                  options.schedule, r.matrix_refusal, info);
  const TgmmTiles t = TgmmTiles::of(resolve_tiling(tiling_of(r), r.m, r.k, r.n, op_name(r.op), [&] {
    return tgmm_auto_tiles(c.schedule, tiling_info, r.lhs_mk, r.n).tiling();
  }));
  c.shape = c.schedule == Schedule::matrix
                ? make_matrix_shape(t.block_k, t.rows_per_step, t.block_n, r.k, r.m, r.n, info, op_name(r.op), 1, false,
                                    options.stage_buffers)
                : make_kernel_shape(t.block_k, t.rows_per_step, t.block_n, r.k, r.m, r.n, c.schedule, tiling_info,
                                    op_name(r.op), r.vec4 ? 4 : 1, r.vec4_lhs_rows ? 4 : 1, 1, nullptr,
                                    options.stage_buffers);
  return c;
}

}  // namespace

Tiling KernelChoice::tiling() const {
  // gmm's (tm, tk, tn) is (rows, step, cols); tgmm's is (rows_per_step, block_k, block_n).
  if (op == Op::tgmm) return TgmmTiles{shape.step, shape.rows, shape.cols}.tiling();
  return {shape.rows, shape.step, shape.cols};
}

KernelChoice choose_kernel(const KernelRequest& request, const DeviceInfo& info, const DeviceInfo& tiling_info,
                           const ResolvedOptions& options) {
  KernelChoice c = request.op == Op::tgmm ? choose_tgmm(request, info, tiling_info, options)
                                          : choose_gmm(request, info, tiling_info, options);
  c.op = request.op;
  return c;
}

}  // namespace vkgmm
