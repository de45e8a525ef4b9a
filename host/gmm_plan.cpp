// gmm's part of its plan: the problem's rules, the tiling, the visit list, the constants and push
// constants. Everything else is the plan core's (plan_core.hpp).
#include <algorithm>
#include <bit>

#include "plan_core.hpp"
#include "plan_internals.hpp"
#include "problem_checks.hpp"
#include "kernel_choice.hpp"
#include "matrix_schedule.hpp"
#include "vkgmm/metadata.hpp"

namespace vkgmm {

namespace {
// The fused combine's loop bound per invocation (tokens x tile columns / invocations x (top_k + 1)): it
// takes calls of up to ~8 tokens with tiles of up to 1024 columns and top-8 (the decode presets), and
// keeps the kernel far inside lavapipe's loop budget (kCpuLoopIterations).
constexpr uint64_t kFusedCombineLoops = 8192;
// Where the options ask, a combined call of at most this many slots (a decode's tokens: 8 tokens of top-8)
// reads its ids in the kernel (ROUTE_IN_KERNEL, interface.h): its tiles are one row, each slot a visit of
// its own, and each token's workgroups take its slots in turn.
constexpr int64_t kRouteInKernelSlots = 64;
// A call of at most this many rows with its group sizes on the device reads them in the kernel
// (SIZES_IN_KERNEL, interface.h): each local group's rows are one workgroup's, TM at a time, so the
// rows a skewed group can pile on one workgroup stay a decode's.
constexpr int64_t kSizesInKernelRows = 64;
// ... and at most this many groups: each workgroup sums the sizes before its group.
constexpr int64_t kSizesInKernelGroups = 1024;
}  // namespace

struct GmmPlan::State {
  GmmProblem problem;
  Tiling tiling;
  Schedule schedule = Schedule::automatic;
  int64_t num_tiles = 0;
  PlanCore core;
  State(Context& ctx, const GmmProblem& p, WorkspaceOwner owner)
      : problem(p), core(ctx, Op::gmm, abi::kGmmConstants, owner) {}
};

namespace {

// The problem as the kernel sees it, once its rules are checked: its shape, and how the plan reads it.
struct GmmRows : GmmShape {
  bool on_device = false, gate_up = false;
  // Routed, combined, few slots (kRouteInKernelSlots), and the options ask for the ids read in the kernel:
  // tiles of one row and narrow columns, which the routing build's path takes too where the kernel's
  // schedule cannot read them (the same bits either way).
  bool few_slots = false;
  // Group sizes on the device, unrouted, at most kSizesInKernelRows rows, and the options allow it: the
  // kernel reads the sizes itself where its schedule and the CPU loop budget let it.
  bool few_rows = false;
};

GmmRows validate(const PlanCore& core, const GmmProblem& p) {
  GmmRows r;
  static_cast<GmmShape&>(r) = check_gmm_problem(core.name(), p);
  // A gated activation reads two product columns, [gate | up], per output column: two accumulator halves.
  r.gate_up = gated(p.epilogue.activation);
  r.on_device = r.routed || p.device_group_sizes.count > 0;
  // A token's top-k ids are distinct experts: one token's slots read each expert's weights once on either
  // path. Several tokens' slots may share experts, which the routing build's visits read once and the
  // slots in the kernel once each: only where the slots are at most an eighth of the experts (about 6 %
  // read twice, the ids drawn evenly).
  const int64_t experts = p.routing.num_experts > 0 ? p.routing.num_experts : r.g_local;
  r.few_slots = core.options().route_in_kernel && r.routed && p.routing.combine && !p.epilogue.save_pre_activation &&
                r.rows > 0 && r.out_n > 0 && r.rows <= kRouteInKernelSlots && (p.m == 1 || r.rows * 8 <= experts);
  r.few_rows = core.options().sizes_in_kernel && !r.routed && r.on_device && r.rows > 0 && r.out_n > 0 &&
               r.rows <= kSizesInKernelRows && r.G <= kSizesInKernelGroups;
  return r;
}

// The kernel for the problem (kernel_choice.hpp): the m tile sized to the groups' rows (with the sizes on
// the device, to the expected rows of each: routed, their distribution; else the hint, else the rows
// spread at random: device_expected_sizes). The direct schedule's K step, which its K slices take whole:
// a block format's walk along K (rhs [n, k]), else 4 elements. Both schedules load 4 elements at a time
// where `vec4`.
KernelChoice choose(const PlanCore& core, const GmmProblem& p, const GmmRows& r,
                    const PlanCore::OperandLayout& layout, bool vec4) {
  std::vector<int32_t> expected;
  if (r.few_slots) {
    // Each slot a visit of its own (ROUTE_IN_KERNEL).
    expected.assign(size_t(r.g_local), 1);
  } else if (r.routed) {
    // Without num_experts, the window is taken as all the experts.
    expected = routed_expected_sizes(p.m, p.routing.top_k, p.routing.num_experts > 0 ? p.routing.num_experts : r.g_local);
  } else if (r.on_device && r.G > 0) {
    expected = device_expected_sizes(r.rows, r.G, r.g_local, p.device_group_sizes.expected_rows);
  }
  KernelRequest q(Op::gmm, p.schedule, &p.tiling, r.rows, p.k, r.out_n,
                  matrix_refusal(core, p.lhs_type, p.rhs_type, true, layout), vec4);
  q.groups = r.on_device ? ActiveGroups{&expected, 0, int64_t(expected.size())}
                         : ActiveGroups{&p.group_sizes, r.group_offset, r.g_local};
  q.rhs_rows_contiguous = !p.transpose_rhs;
  q.rhs_blocks = is_quantized(p.rhs_type);
  q.halves = r.gate_up ? 2 : 1;
  q.k_walk = k_walk_step(p.rhs_type, p.transpose_rhs, vec4);
  q.heights_per_group = !r.few_slots;
  q.groups_expected = r.on_device;
  if (r.few_slots) {
    // Each token's workgroups walk all its slots (ROUTE_IN_KERNEL): columns narrow enough that the tokens'
    // tiles are 4 workgroups per compute unit, 4 columns at least (a power of two, as tiles are).
    const int64_t want_tiles = (4 * std::max<int64_t>(core.tiling_info().compute_units, 1) + p.m - 1) / p.m;
    int64_t cols = 4;
    while (cols * 2 * want_tiles <= r.out_n) cols *= 2;
    q.most_cols = cols;
  }
  return choose_kernel(q, core.info(), core.tiling_info(), core.options());
}

// A later pass of the kernel (tile heights per group) over its visits: (n tiles) x its visits, spread over
// y and z beyond y's limit.
void add_later_pass(PlanCore::Launch& launch, const KernelShape& shape, const abi::GmmPush& push, uint64_t tiles_n,
                    const DeviceInfo& info) {
  PlanCore::Launch::Pass& later = launch.later_passes.emplace_back();
  later.shape = shape;
  later.push.start<abi::GmmPush>() = push;
  const SpreadYZ visits = spread_yz(push.num_visits, info);
  later.grid[0] = tiles_n;
  later.grid[1] = visits.y;
  later.grid[2] = visits.z;
}

}  // namespace

GmmPlan::GmmPlan(Context& ctx, const GmmProblem& p) : GmmPlan(ctx, p, true) {}

GmmPlan PlanInternals::taking_routing(Context& ctx, const GmmProblem& problem, bool own_workspace) {
  return GmmPlan(ctx, problem, own_workspace, true);
}

GmmPlan::GmmPlan(Context& ctx, const GmmProblem& p, bool own_workspace, bool routing_given) {
  auto st = std::make_shared<State>(ctx, p, own_workspace ? app_plan_owner(ctx) : WorkspaceOwner::composite);
  PlanCore& core = st->core;
  const DeviceInfo& info = core.info();
  const char* op = core.name();
  const GmmRows r = validate(core, p);
  const Routing& route = p.routing;
  const bool routed = r.routed;
  const int64_t rows = r.rows, out_n = r.out_n;

  PlanCore::Launch launch;
  launch.lhs = {p.lhs_type, uint64_t(r.lhs_rows) * p.k};
  launch.rhs = {p.rhs_type, element_count(core.name(), "rhs", r.g_local, p.k, p.n)};
  launch.out = {p.out_type, uint64_t(r.out_rows) * out_n};
  launch.existing_out = p.existing_out;
  const PlanCore::OperandLayout layout = core.layout_operands(launch.lhs, launch.rhs, launch.out, p.existing_out);
  if (p.epilogue.bias) {
    launch.bias = uint64_t(r.g_local) * p.n;
    core.check_bias(*launch.bias);
  }
  // Both schedules load 4 elements at a time where K (and N, unless rhs is transposed) allow it;
  // record() falls back to scalar loads when an operand's offset is not a multiple of 4 elements. With
  // a gated activation the up half starts at column out_n, which must keep the 4-element alignment too.
  const bool vec4 = layout.vec4_allowed && p.k % 4 == 0 && (p.transpose_rhs || out_n % 4 == 0);
  const KernelChoice kernel = choose(core, p, r, layout, vec4);
  const KernelShape& shape = kernel.shape;
  st->tiling = kernel.tiling();
  st->schedule = kernel.schedule;
  launch.shape = shape;

  // The visits, the grid and the push constants.
  const int64_t tm = shape.rows;
  abi::GmmPush push{};
  push.m = uint32_t(rows);
  push.k = uint32_t(p.k);
  push.n = uint32_t(p.n);
  push.out_n = uint32_t(out_n);
  push.lhs_div = routed && !route.lhs_per_slot ? uint32_t(route.top_k) : 1u;
  push.group_offset = uint32_t(r.group_offset);
  // Fill visits only copy or zero rows: give each at least 256 of them, so inactive rows (which the
  // m tile was not sized for) cannot multiply the visits.
  push.fill_rows = static_cast<uint32_t>(tm * ((256 + tm - 1) / tm));
  push.visits_off = static_cast<uint32_t>(r.G + 1);
  const uint64_t tiles_n = (out_n + shape.cols - 1) / shape.cols;
  // A small combined call sums its slots in the kernel (FUSED_COMBINE): the last workgroup of each n
  // tile does the whole tile's tokens, so only where that is a short loop, and on the direct schedule
  // (CPU drivers, where the combine dispatch and its barrier cost more than the sum at decode; GPUs'
  // decode schedule, where they are most of a decode's fixed cost). The last workgroup is found by an
  // atomic count after a buffer memory barrier, the workgroups' stores coherent.
  const uint64_t fused_loops =
      routed ? (uint64_t(p.m) * shape.cols + shape.invocations() - 1) / shape.invocations() * (route.top_k + 1) : 0;
  // A call of few slots reads the ids in the kernel on the direct schedule where the options ask, within a
  // CPU driver's loop budget: each invocation walks its token's top_k slots, and workgroup (0, 0) first
  // reads the ids for the status word (counted as a loop over all T * top_k slots, whether or not a status
  // view is given at record).
  uint64_t reduction_loops = reduction_loop_iterations(shape, p.k, r.gate_up ? 2 : 1, false);
  const uint64_t token_loops = uint64_t(route.top_k) * (reduction_loops + 1) + 1 + uint64_t(p.m) * route.top_k + 1;
  const bool in_kernel = r.few_slots && !shape.use_shared &&
                         (info.type != VK_PHYSICAL_DEVICE_TYPE_CPU || token_loops <= kCpuLoopIterations);
  const bool fused_combine =
      routed && route.combine && !in_kernel && !shape.use_shared && fused_loops <= kFusedCombineLoops;
  // A call of few rows reads its device sizes in the kernel on the direct schedule, with one tile height
  // (where the estimate takes several, the build divides the rows), within a CPU driver's loop budget:
  // a group's workgroup walks its rows' tiles (a fill workgroup its stretch's), after summing the sizes
  // before its group (two loops: at most G + 2 passes, each loop's exit counted); workgroup (0, 0)'s item
  // 0 sums them all for the status word, then the window's first row alone (G + 1 + go + 1 <= 2 G + 1).
  const uint64_t row_tiles = (uint64_t(rows) + tm - 1) / tm;
  const uint64_t sizes_loops = 2 * uint64_t(r.G) + 1 + row_tiles * (std::max<uint64_t>(reduction_loops, push.fill_rows / tm) + 1) + 1;
  const bool sizes_in_kernel = r.few_rows && !shape.use_shared && kernel.later_shapes.empty() &&
                               (info.type != VK_PHYSICAL_DEVICE_TYPE_CPU || sizes_loops <= kCpuLoopIterations);
  // An item's loops: its K steps, or a fill visit's row tiles; the fused combine's, which the same
  // invocation runs after its reduction; and the persistent loop's own iteration. The K steps counted
  // for the scalar loads a record() with views at unaligned offsets falls back to, the most: the check,
  // and the persistent grid's workgroups, must hold them (sized for 4-element ones, a workgroup taking
  // many items of a long k would run out of its budget on an unaligned lhs).
  for (const KernelShape& later : kernel.later_shapes)
    reduction_loops = std::max(reduction_loops, reduction_loop_iterations(later, p.k, r.gate_up ? 2 : 1, false));
  const uint64_t item_loops =
      in_kernel          ? token_loops
      : sizes_in_kernel ? sizes_loops
                        : std::max<uint64_t>(reduction_loops, push.fill_rows / tm) + (fused_combine ? fused_loops : 0) + 1;
  check_cpu_loop_budget(info, op, item_loops, "k = " + std::to_string(p.k));
  // The routing's slots, window and output, which both routed paths take.
  PlanCore::Routing routing_facts;
  if (routed) {
    routing_facts.tokens = uint32_t(p.m);
    routing_facts.top_k = uint32_t(route.top_k);
    routing_facts.group_offset = uint32_t(p.group_offset);
    routing_facts.num_local = uint32_t(r.g_local);
    routing_facts.num_experts = uint32_t(route.num_experts);
    routing_facts.out_n = uint32_t(out_n);
    routing_facts.combine = route.combine;
  }
  if (in_kernel) {
    // No metadata: the grid is (n tiles) x tokens, on the per-item grid whatever the options ask (a few
    // workgroups per token).
    launch.routing = routing_facts;
    launch.routing->in_kernel = true;
    st->num_tiles = -1;  // the visits follow the ids, read on the device
    push.top_k = uint32_t(route.top_k);
    push.window_offset = uint32_t(p.group_offset);
    push.route_experts = uint32_t(r.g_local);
    push.num_experts = uint32_t(route.num_experts);
  } else if (sizes_in_kernel) {
    // No metadata: the grid is (n tiles) x (the local groups and two fill stretches), on the per-item grid
    // whatever the options ask.
    launch.kernel_sizes = uint32_t(r.G);
    st->num_tiles = -1;  // the visits follow the sizes, read on the device
    push.route_experts = uint32_t(r.g_local);
    push.num_groups = uint32_t(r.G);
  } else if (r.on_device) {
    // The list is built by record(), padded to a bound: each active group has at most ceil(rows / tm)
    // tiles, its rows adding up to at most m, and the rest of the rows at most 2 + rows / fill_rows
    // fill visits (fill_rows >= tm), so fewer than m / tm + G_local + 2 visits in all.
    st->num_tiles = -1;
    push.num_visits = rows > 0 ? static_cast<uint32_t>((rows + tm - 1) / tm + r.g_local + 2) : 0;
    PlanCore::DeviceMetadata d{uint32_t(r.G), uint32_t(r.group_offset), uint32_t(r.g_local), uint32_t(rows),
                               uint32_t(tm), push.fill_rows, push.num_visits, true};
    if (rows > 0 && !kernel.later_shapes.empty()) {
      // Tile heights per group, divided by the build: a group's rows past its whole tiles of tm go to a
      // smaller height h only where their c tiles cost less than one tile of tm, c (h + overhead) < tm +
      // overhead, so c <= (tm + overhead - 1) / (h + overhead), and c < tm / h; no pass takes more tiles
      // than the rows' plus one per group. Each later list holds the most any later height could take.
      const uint64_t o = uint64_t(kernel.heights.overhead), smallest = uint64_t(kernel.later_shapes.back().rows);
      uint64_t per_group = 0;
      for (const KernelShape& later : kernel.later_shapes) {
        const uint64_t h = uint64_t(later.rows);
        per_group = std::max(per_group, std::min(uint64_t(tm) / h - 1, (uint64_t(tm) + o - 1) / (h + o)));
        d.heights |= 1u << std::countr_zero(uint64_t(tm) / h);
      }
      d.later_visits = static_cast<uint32_t>(std::min<uint64_t>(uint64_t(r.g_local) * per_group,
                                                                (uint64_t(rows) + smallest - 1) / smallest + r.g_local));
      d.overhead = static_cast<uint32_t>(o);
      // The build's indirect command for a later pass folds its visits into z past the first pass's y:
      // where that z could pass the device's limit, one height.
      const uint64_t y = spread_yz(push.num_visits, info).y;
      if ((d.later_visits + y - 1) / y > info.max_workgroup_count[2]) d.heights = d.later_visits = d.overhead = 0;
    }
    const uint64_t visits_in_all = push.num_visits + uint64_t(std::popcount(d.heights)) * d.later_visits;
    launch.grid_choice =
        core.choose_grid(p.grid, tiles_n * visits_in_all, tiles_n * visits_in_all * item_loops, item_loops);
    std::optional<PlanCore::Routing> routing;
    if (routed) {
      routing = routing_facts;
      routing->fused_tiles = fused_combine ? uint32_t(tiles_n) : 0u;
      routing->pre_n = p.epilogue.save_pre_activation ? uint32_t(p.n) : 0u;
    }
    const PlanCore::Workspace& words = core.use_device_metadata(launch, d, routing);
    // The persistent grid loops over the real visits only, their count read where the build wrote it.
    if (launch.grid_choice.persistent) push.visit_count_off = static_cast<uint32_t>(words.visit_count);
    if (routed) {
      push.map_off = static_cast<uint32_t>(words.map);
      push.weight_off = static_cast<uint32_t>(words.weight_rows);
      push.top_k = uint32_t(route.top_k);
      push.partial_off = static_cast<uint32_t>(words.partial);
      push.tile_count_off = static_cast<uint32_t>(words.tile_counts);
      push.pre_off = static_cast<uint32_t>(words.pre);
    }
    for (size_t i = 0; d.heights && i < kernel.later_shapes.size(); ++i) {
      abi::GmmPush pass_push = push;
      pass_push.visits_off = static_cast<uint32_t>(PlanCore::later_visits_word(d, uint32_t(i + 1)));
      pass_push.num_visits = d.later_visits;
      // The persistent grid loops up to the pass's visit count, after its command.
      if (launch.grid_choice.persistent)
        pass_push.visit_count_off =
            static_cast<uint32_t>(PlanCore::later_command_word(d, uint32_t(i + 1)) + VKGMM_DISPATCH_COUNT_WORD);
      add_later_pass(launch, kernel.later_shapes[i], pass_push, tiles_n, info);
    }
  } else if (rows > 0) {
    // Visits: tiles starting at each active group's first row, then the fill visits (group -1) of the rows
    // outside the active groups' (see make_gmm_visits). With tile heights per group, a pass of the kernel
    // per height, each over its own visits (the first one's with the fill visits), laid out one after another.
    GroupMetadata md = make_group_metadata(p.group_sizes, p.m, tm, p.group_offset, r.g_local, false);
    st->num_tiles = md.num_tiles;
    launch.host_metadata = md.group_offsets;
    const ActiveGroups active{&p.group_sizes, r.group_offset, r.g_local};
    const size_t passes = std::max<size_t>(kernel.heights.heights.size(), 1);
    uint64_t visits_in_all = 0;
    for (size_t pass = 0; pass < passes; ++pass) {
      const int64_t height = pass ? kernel.later_shapes[pass - 1].rows : tm;
      const GmmVisits visits =
          passes == 1 ? make_gmm_visits(md.group_offsets, p.m, tm, p.group_offset, r.g_local, push.fill_rows)
                      : make_gmm_visits(md.group_offsets, p.m, height, p.group_offset, r.g_local, push.fill_rows,
                                        kernel.heights.rows(pass, active), pass == 0);
      abi::GmmPush pass_push = push;
      pass_push.visits_off = static_cast<uint32_t>(launch.host_metadata.size());
      pass_push.num_visits = static_cast<uint32_t>(visits.groups.size());
      launch.host_metadata.insert(launch.host_metadata.end(), visits.groups.begin(), visits.groups.end());
      launch.host_metadata.insert(launch.host_metadata.end(), visits.row_starts.begin(), visits.row_starts.end());
      visits_in_all += pass_push.num_visits;
      if (pass == 0) {
        push = pass_push;
        continue;
      }
      add_later_pass(launch, kernel.later_shapes[pass - 1], pass_push, tiles_n, info);
    }
    launch.grid_choice =
        core.choose_grid(p.grid, tiles_n * visits_in_all, tiles_n * visits_in_all * item_loops, item_loops);
  }
  if (rows > 0) {
    launch.set_push(push);
    // Grid: (n tiles) x (visits; routed in the kernel, tokens; sized in the kernel, the local groups and two
    // fill stretches), spread over y and z beyond y's limit (or the persistent grid).
    const uint64_t items = in_kernel ? uint64_t(p.m) : sizes_in_kernel ? uint64_t(r.g_local) + 2 : push.num_visits;
    const SpreadYZ spread = spread_yz(items, info);
    launch.grid[0] = tiles_n;
    launch.grid[1] = spread.y;
    launch.grid[2] = spread.z;
    launch.constants = {
        {VKGMM_ID_GMM_TRANSPOSE_RHS, p.transpose_rhs},
        {VKGMM_ID_VEC4, vec4},
        {VKGMM_ID_GMM_ROUTED, routed},
        {VKGMM_ID_GMM_WEIGHTED, routed && route.combine},
        {VKGMM_ID_GMM_BIAS, p.epilogue.bias},
        {VKGMM_ID_GMM_ACTIVATION, static_cast<uint32_t>(p.epilogue.activation)},
        {VKGMM_ID_GMM_FUSED_COMBINE, fused_combine},
        {VKGMM_ID_GMM_ROUTE_IN_KERNEL, in_kernel},
        {VKGMM_ID_GMM_SIZES_IN_KERNEL, sizes_in_kernel},
        {VKGMM_ID_GMM_K_SLICES, shape.slices},
        {VKGMM_ID_GMM_STEPS_IN_FLIGHT, shape.steps_in_flight},
        {VKGMM_ID_GMM_SAVE_PRE, p.epilogue.save_pre_activation},
        // Vector stores on the schedules whose invocations own groups of 4 adjacent columns (routed in the
        // kernel, the store adds each column to the token's sums instead).
        {VKGMM_ID_GMM_VEC4_OUT, (vec4 || shape.use_shared) && out_n % 4 == 0 && !in_kernel},
    };
    launch.slices_across_lanes = shape.slices > 1 && p.transpose_rhs;  // gmm.comp's SLICE_FASTEST
    launch.alignment.vec4_out_id = VKGMM_ID_GMM_VEC4_OUT;
    launch.alignment.vec4_needs_lhs = true;
    launch.alignment.rhs_any_offset = is_quantized(p.rhs_type);
  }
  launch.routing_given = routing_given;
  core.build(launch);
  state_ = std::move(st);
}

VKGMM_GROUPED_PLAN_FORWARDS(GmmPlan, GmmProblem, GmmOperands, gmm)
int64_t GmmPlan::num_tiles() const { return state_->num_tiles; }
void PlanInternals::check_records(const GmmPlan& plan, const char* op) {
  live_state(plan.state_, op).core.options().check_records(op);
}

void PlanInternals::check_in_buffer(const GmmPlan& plan, const char* op, const char* name, const BufferView& view) {
  live_state(plan.state_, op).core.check_in_buffer(op, name, view);
}

std::vector<PlanInternals::VisitList> PlanInternals::visit_lists(const GmmPlan& plan) {
  std::vector<VisitList> lists;
  for (PushBlock push : plan.state_->core.pass_pushes())
    lists.push_back({push.as<abi::GmmPush>().visits_off, push.as<abi::GmmPush>().num_visits});
  return lists;
}
void PlanInternals::record_routing(const GmmPlan& plan, VkCommandBuffer cb, const GmmOperands& ops) {
  plan.state_->core.record(cb, views_of(ops), true);
}
RoutingSource PlanInternals::routing_source(const GmmPlan& plan, const BufferView& workspace) {
  return plan.state_->core.routing_source(workspace);
}
void PlanInternals::record_routed_from(const GmmPlan& plan, VkCommandBuffer cb, const GmmOperands& ops,
                                       const RoutingSource& routing) {
  plan.state_->core.record(cb, views_of(ops), false, &routing);
}
void PlanInternals::check_routed_from(const GmmPlan& plan, const GmmOperands& ops, const RoutingSource& routing) {
  plan.state_->core.check(views_of(ops), &routing);
}
BufferView GmmPlan::saved_pre_activation(const BufferView& workspace) const {
  const State& st = *state_;
  const GmmProblem& p = st.problem;
  if (!p.epilogue.save_pre_activation)
    throw Error(Status::invalid_argument, "gmm: saved_pre_activation: the plan saves none (epilogue.save_pre_activation)");
  check_workspace_view("gmm: saved_pre_activation", workspace, st.core.workspace_bytes(), st.core.info());
  const BufferView work = st.core.workspace_view(workspace);
  const VkDeviceSize bytes = VkDeviceSize(p.m) * VkDeviceSize(p.routing.top_k) * VkDeviceSize(p.n) * 4;
  return {work.buffer, work.offset + st.core.workspace_layout().pre * 4, work.buffer ? bytes : 0};
}

}  // namespace vkgmm
