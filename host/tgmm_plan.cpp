// tgmm's part of its plan: the problem's rules, the tiling, the group offsets, the constants and push
// constants. Everything else is the plan core's (plan_core.hpp).
#include <algorithm>

#include "plan_core.hpp"
#include "kernel_choice.hpp"
#include "matrix_schedule.hpp"
#include "plan_internals.hpp"
#include "problem_checks.hpp"
#include "tgmm_items.hpp"
#include "tiling.hpp"
#include "vkgmm/metadata.hpp"

namespace vkgmm {

namespace {

// One invocation walks all the rows of its block's group (the kernel does not split a group over work
// items), so on CPU drivers the largest active group must fit the loop budget, with the loads planned
// (4 rows per iteration with VEC4), plus the persistent loop's own iteration. Group sizes on the device
// are unknown here: one group may hold every row, so m must fit. Returns the refusal of the scalar loads
// record() falls back to for an rhs at an unaligned offset (one row per iteration), where those would
// not fit (empty: they do, or the plan has none).
std::string check_group_loop_budget(const DeviceInfo& info, const char* op, const TgmmProblem& p, int64_t groups,
                                    const KernelShape& shape, bool vec4) {
  std::string what;
  int64_t rows = p.m;
  if (p.device_group_sizes.count > 0) {
    what = "m = " + std::to_string(p.m) + " rows (device_group_sizes: one group may hold them all)";
  } else {
    const auto first = p.group_sizes.begin() + p.group_offset;
    const auto largest = std::max_element(first, first + groups);
    rows = *largest;
    what = "group_sizes[" + std::to_string(largest - p.group_sizes.begin()) + "] = " + std::to_string(rows) + " rows";
  }
  auto loops = [&](bool four) { return reduction_loop_iterations(shape, uint64_t(rows), 1, four) + 1; };
  check_cpu_loop_budget(info, op, loops(vec4), what);
  if (!vec4) return {};
  const std::string remedy = std::string("give rhs an offset that is a multiple of 4 elements (and inputs past one "
                                         "storage binding texel views: buffers from Context::create_buffer), or ") +
                             kSplitTheReduction;
  return cpu_loop_budget_error(info, op, loops(false),
                               what + " with scalar loads (rhs's offset not a multiple of 4 elements, or an input past "
                                      "one storage binding read in parts)",
                               remedy.c_str());
}

}  // namespace

struct TgmmPlan::State {
  TgmmProblem problem;
  Tiling tiling;
  Schedule schedule = Schedule::automatic;
  PlanCore core;
  State(Context& ctx, const TgmmProblem& p, WorkspaceOwner owner)
      : problem(p), core(ctx, Op::tgmm, abi::kTgmmConstants, owner) {}
};

TgmmPlan::TgmmPlan(Context& ctx, const TgmmProblem& p) : TgmmPlan(ctx, p, true) {}

TgmmPlan::TgmmPlan(Context& ctx, const TgmmProblem& p, bool own_workspace) {
  auto st = std::make_shared<State>(ctx, p, own_workspace ? app_plan_owner(ctx) : WorkspaceOwner::composite);
  PlanCore& core = st->core;
  const char* op = core.name();

  const int64_t G = check_grouped_problem(op, p.m, p.k, p.n, p.group_sizes, p.device_group_sizes, p.lhs_type,
                                          p.rhs_type, p.out_type, false);
  const int64_t groups = check_group_window(op, G, p.group_offset, p.num_actual_groups, "num_actual_groups");

  PlanCore::Launch launch;
  launch.lhs = {p.lhs_type, uint64_t(p.k) * p.m};
  launch.rhs = {p.rhs_type, uint64_t(p.m) * p.n};
  launch.out = {p.out_type, element_count(op, "out", groups, p.k, p.n)};
  launch.existing_out = p.existing_out;
  const PlanCore::OperandLayout layout = core.layout_operands(launch.lhs, launch.rhs, launch.out, p.existing_out);
  // rhs is read as vec4 along N where N allows (see VEC4 in shaders/tgmm.comp).
  const bool vec4 = layout.vec4_allowed && p.n % 4 == 0;
  // With lhs stored [m, k], the block's k rows are read 4 at a time too.
  // lhs stored [k, m] is read 4 rows of the group at a time instead (m a multiple of 4).
  const bool vec4_lhs = vec4 && (p.lhs_mk ? p.k % 4 == 0 : p.m % 4 == 0);
  KernelRequest q(Op::tgmm, p.schedule, &p.tiling, p.m, p.k, p.n,
                  matrix_refusal(core, p.lhs_type, p.rhs_type, false, layout), vec4);
  q.lhs_mk = p.lhs_mk;
  q.vec4_lhs_rows = vec4_lhs && p.lhs_mk;
  const KernelChoice kernel = choose_kernel(q, core.info(), core.tiling_info(), core.options());
  const KernelShape& shape = kernel.shape;
  st->tiling = kernel.tiling();
  st->schedule = kernel.schedule;
  launch.shape = shape;
  launch.alignment.scalar_loads_refusal = check_group_loop_budget(core.info(), op, p, groups, shape, vec4);

  // Every workgroup walks its group's rows directly, so of the metadata it needs only the group offsets:
  // the visit list's role (every active group, empty or not, gets its block written) is the grid's z.
  // m = 0 still writes every group's block (zeros or existing_out).
  // With the sizes on the device, record() builds the offsets there.
  const uint64_t tiles_n = (p.n + shape.cols - 1) / shape.cols, tiles_k = (p.k + shape.rows - 1) / shape.rows;
  // On a GPU a group with far more rows than the others is reduced in chunks by several work items at
  // once (tgmm_items.hpp), where no operand is bound in parts (the combine binds out whole): with the
  // sizes on the host, split now; with them on the device, by the metadata build, into a workspace sized
  // for the most slots the rule may take. One rule and one budget for both, so both give the same bits:
  // the chunks' f32 partial sums take at most out's bytes and kTgmmSplitBytes (a device-sized plan holds
  // them whatever the sizes), within one binding beside the metadata.
  TgmmItems items;
  PlanCore::DeviceSplit device_split;  // slots 0: none
  const bool device_sizes = p.device_group_sizes.count > 0;
  const std::vector<int32_t> offsets = device_sizes ? std::vector<int32_t>{} : make_group_offsets(p.group_sizes);
  if (core.tiling_info().type != VK_PHYSICAL_DEVICE_TYPE_CPU && !layout.split) {
    TgmmSplitLimits limits;
    limits.step = shape.step;
    limits.group_elements = uint64_t(p.k) * p.n;
    limits.group_blocks = tiles_n * tiles_k;
    // Two workgroups at once per compute unit: the register tiles are sized for two waves (tiling.cpp).
    limits.concurrent_workgroups = 2 * uint64_t(std::max<uint32_t>(core.tiling_info().compute_units, 1));
    // The workspace's words beside the partial sums, for the most slots and work items: the core's layout
    // with no partial sums.
    PlanCore::DeviceMetadata most{uint32_t(G),      uint32_t(p.group_offset), uint32_t(groups), uint32_t(p.m), 1, 1,
                                  uint32_t(groups + kMostTgmmChunks), false};
    most.split.slots = kMostTgmmChunks;
    const uint64_t metadata_bytes = core.layout_workspace(most, std::nullopt).bytes();
    const uint64_t range = core.info().max_storage_buffer_range;
    limits.budget_bytes =
        range > metadata_bytes
            ? std::min<uint64_t>({range - metadata_bytes, uint64_t(groups) * limits.group_elements * 4, kTgmmSplitBytes})
            : 0;
    // Where both paths may split: the most items the slots allow within the grid's z, and the device
    // build's even share in 32 bits (shaders/tgmm_split.glsl).
    const uint64_t slots = tgmm_split_slots(limits);
    const bool may_split = uint64_t(groups) + slots <= core.info().max_workgroup_count[2] &&
                           limits.group_blocks * limits.concurrent_workgroups <= UINT32_MAX;
    if (may_split && !device_sizes) {
      items = split_skewed_groups(offsets, p.group_offset, groups, limits);
    } else if (may_split && p.m > 0 && slots >= 2) {
      device_split.slots = uint32_t(slots);
      device_split.step = uint32_t(limits.step);
      device_split.blocks = uint32_t(limits.group_blocks);
      device_split.concurrent = uint32_t(limits.concurrent_workgroups);
      device_split.group_elements = uint32_t(limits.group_elements);
    }
  }
  const uint64_t work_items = items.split ? items.count() : uint64_t(groups) + device_split.slots;
  // Each block position walks every work item's rows: all m of them, plus each item's partial last step
  // (at most 32 rows' worth of iterations with the direct schedule's peeled rows), plus the loop itself;
  // counted for scalar loads, which record() may fall back to. One block of every item is also the most
  // a persistent workgroup can take beyond its even share (an item's blocks are consecutive).
  const uint64_t pad = std::max<uint64_t>(shape.step, 32);
  const uint64_t loops = reduction_loop_iterations(shape, uint64_t(p.m) + work_items * pad, 1, false) + work_items;
  launch.grid_choice = core.choose_grid(p.grid, tiles_n * tiles_k * work_items, tiles_n * tiles_k * loops, loops);
  abi::TgmmPush push{};
  if (device_sizes) {
    PlanCore::DeviceMetadata d{uint32_t(G), uint32_t(p.group_offset), uint32_t(groups), uint32_t(p.m), 1, 1, 0, false};
    if (device_split.slots) {
      d.max_visits = uint32_t(work_items);
      d.split = device_split;
    }
    push.items_off = static_cast<uint32_t>(core.use_device_metadata(launch, d, std::nullopt).items);
  } else {
    launch.host_metadata = items.split ? items.items : offsets;
  }
  launch.split_reduction = items.split;
  push.m = uint32_t(p.m);
  push.k = uint32_t(p.k);
  push.n = uint32_t(p.n);
  push.num_groups = uint32_t(groups);
  push.group_offset = uint32_t(p.group_offset);
  push.num_items = uint32_t(work_items);
  launch.set_push(push);
  // Grid: (n blocks) x (k blocks) x (work items), or the persistent grid over those blocks.
  launch.grid[0] = tiles_n;
  launch.grid[1] = tiles_k;
  launch.grid[2] = work_items;
  launch.constants = {
      {VKGMM_ID_TGMM_LHS_MK, p.lhs_mk},
      {VKGMM_ID_TGMM_OUT_NK, p.out_nk},
      {VKGMM_ID_VEC4, vec4},
      {VKGMM_ID_TGMM_VEC4_LHS, vec4_lhs},
      // The block's columns in groups of 4 adjacent ones (the 4-element loads' or the shared schedule's),
      // adjacent in out only where it is stored [k, n].
      {VKGMM_ID_TGMM_VEC4_OUT, (vec4 || shape.use_shared) && !p.out_nk && p.n % 4 == 0},
      {VKGMM_ID_TGMM_SPLIT, items.split.has_value() || device_split.slots > 0},
  };
  launch.alignment.vec4_lhs_id = VKGMM_ID_TGMM_VEC4_LHS;
  launch.alignment.vec4_out_id = VKGMM_ID_TGMM_VEC4_OUT;
  // With lhs [k, m] any offset does: the direct schedule peels rows up to an aligned one, and the shared
  // one never reads VEC4_LHS there (it loads lhs [k, m] 4 elements at a time but not as one vec4, its steps
  // starting at any row), so an unaligned offset must not build a second pipeline differing only in it.
  launch.alignment.vec4_lhs_any_offset = !p.lhs_mk;
  core.build(launch);
  state_ = std::move(st);
}

VKGMM_GROUPED_PLAN_FORWARDS(TgmmPlan, TgmmProblem, TgmmOperands, tgmm)

}  // namespace vkgmm
