// The plan core: what every grouped op's plan has in common, written once (internal).
//
// After CUTLASS's base_grouped (can_implement / initialize / run for every grouped kernel): an op's plan
// is this core plus a small per-op part (host/gmm_plan.cpp, host/tgmm_plan.cpp) that validates its
// problem, picks its tiling and describes its launch as one value (Launch: operand types and counts, the
// kernel shape and its own constants, the metadata, the grid, the push constants), asking the core only
// questions that change nothing (layout_operands, choose_grid, layout_workspace). build() does the rest for
// every op: operand sizes and binding limits, the modules and pipelines, the metadata and workspace; and
// at record time it checks the views, binds them (storage buffers, parts or texel views) and records its
// dispatches in order. A new op is a new per-op part, never a copy of this.
#pragma once

#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "interface.hpp"
#include "kernel.hpp"
#include "op.hpp"
#include "operand_table.hpp"
#include "planned_pipeline.hpp"
#include "routing_source.hpp"
#include "split_reduction.hpp"
#include "dispatch.hpp"
#include "vkgmm/ops.hpp"
#include "workspace_arena.hpp"

namespace vkgmm {

// An operand as the kernel reads it: its element type and count. An input of count 0 (tgmm with m = 0)
// is never read: it is neither checked nor bound (the metadata stands in).
struct OperandSpec {
  DType type = DType::f32;
  uint64_t count = 0;
};

class PlanCore {
 public:
  // `constants`: the op's specialization constants beside abi::kCommonConstants (abi::kGmmConstants, ...).
  // `owner`: whether build() allocates the workspace for operands that bring none, or the plan is a part
  // of another, whose record() always gives it its region.
  template <size_t N>
  PlanCore(Context& ctx, Op op, const abi::SpecConstant (&constants)[N], WorkspaceOwner owner)
      : PlanCore(ctx, op, owner) {
    kernel_.declare(constants);
  }

  // ----- what the op's part asks while it describes its launch (none of these changes the plan) -----
  const DeviceInfo& info() const;
  // The device the schedule and tiles are chosen for: info(), unless a test plans as another device
  // (tiling_device.hpp). What may run (limits, CPU drivers' loop budget) is still info()'s to say.
  const DeviceInfo& tiling_info() const;
  const ResolvedOptions& options() const;
  const char* name() const { return op_name(op_); }
  // Refuses a view past the end of its buffer (check_view_in_buffer), naming `op` and `name`.
  void check_in_buffer(const char* op, const char* name, const BufferView& view) const;
  // How lhs, rhs and out are bound (existing_out as out): in parts past one binding, or their inputs through
  // texel views; refuses operands no layout reaches.
  struct OperandLayout {
    OperandSizes sizes;
    bool split = false, texel_unsplit = false;
    VkDeviceSize part_bytes = 0;  // > 0: operands are bound in parts of this size (the split layout)
    // Whether the kernel may use 4-element loads at all (the op adds its shape's conditions): the direct
    // schedule's micro-tile loads, the shared schedule's staging loads.
    bool vec4_allowed = false;
  };
  OperandLayout layout_operands(OperandSpec lhs, OperandSpec rhs, OperandSpec out, bool existing_out) const;
  // Whether the kernel takes the persistent grid (Grid: the options', else `requested`, else automatic);
  // `items` is the op's work items, the per-item grid's workgroups (past 2^32 - 1 the shader's loop index
  // would wrap: such a problem keeps that grid), `loop_iterations` a bound on the loop iterations an
  // invocation runs for all of them together, and `uneven_loops` a bound on what one workgroup's items
  // can take beyond an even share of those, however many workgroups stride over the items (gmm: one
  // item's loops; tgmm: one item of every group, since a group's blocks are consecutive items and its
  // rows set their cost).
  // lavapipe (llvmpipe) silently ends every loop of an invocation once it has run 65535 iterations in
  // all, whatever the loops: on CPU devices the persistent grid takes at least as many workgroups as
  // keep each even share within half of that, and a problem needing about one per item, or whose uneven
  // part could pass the other half, keeps the per-item grid.
  struct GridChoice {
    bool persistent = false;
    uint64_t min_workgroups = 1;  // the loop budget's floor on CPU devices
  };
  GridChoice choose_grid(Grid requested, uint64_t items, uint64_t loop_iterations, uint64_t uneven_loops) const;
  // Metadata built on the device by record() (group sizes in a device buffer): the metadata module writes
  // group_offsets[G + 1] and, with `visits`, the visit list padded to max_visits at visits_off = G + 1,
  // into the workspace (the operands' or the plan's own), then the dispatch reads it there. With the
  // indirect grid (options), the build writes the op's grid there too and the dispatch is indirect.
  // tgmm's split reduction built on the device (shaders/tgmm_split.glsl): the rule's inputs
  // (tgmm_items.hpp), the slots the workspace holds (none: no split); the work items are the list, at most
  // max_visits of them.
  struct DeviceSplit {
    uint32_t slots = 0, step = 1, blocks = 1, concurrent = 1, group_elements = 0;
  };
  // gmm's tile heights per group (VKGMM_ID_META_HEIGHTS): `heights` bit j set, a later pass of the kernel
  // in tiles of tm >> j rows, each with a list of later_visits slots; `overhead`, each visit's cost beside
  // its rows.
  struct DeviceMetadata {
    uint32_t num_groups = 0, group_offset = 0, num_local = 0, m = 0, tm = 1, fill_rows = 1, max_visits = 0;
    bool visits = false;
    DeviceSplit split;
    uint32_t heights = 0, overhead = 0, later_visits = 0;
  };
  // Where later pass `pass` (1, 2, ...) of d's kernel finds its visit list, and its indirect command after
  // the list (then its visit count, kDispatchWords in all).
  static uint64_t later_visits_word(const DeviceMetadata& d, uint32_t pass) {
    return dispatch_word(d) + kDispatchWords + uint64_t(pass - 1) * (2 * uint64_t(d.later_visits) + kDispatchWords);
  }
  static uint64_t later_command_word(const DeviceMetadata& d, uint32_t pass) {
    return later_visits_word(d, pass) + 2 * uint64_t(d.later_visits);
  }
  // Routing by expert ids (with device metadata, whose group sizes are then the routing's counts): the
  // metadata build first orders the slots on the device (shaders/routing.glsl); with `combine` the kernel
  // writes fp32 per-slot results into the workspace and an ordered sum (shaders/combine.comp) writes out;
  // with fused_tiles > 0 the kernel sums them itself (FUSED_COMBINE, interface.h), counting in
  // fused_tiles workspace words the build zeroes, and there is no combine dispatch. With in_kernel (a
  // combined call of few slots, without device metadata) the kernel reads the ids, weights and status
  // word itself (ROUTE_IN_KERNEL, interface.h): no build, no combine dispatch, no workspace.
  struct Routing {
    uint32_t tokens = 0, top_k = 0, group_offset = 0, num_local = 0, num_experts = 0, out_n = 0;
    bool combine = false;
    uint32_t fused_tiles = 0;
    uint32_t pre_n = 0;  // > 0: the kernel saves each slot's pre-activation, pre_n f32 words (SAVE_PRE)
    bool in_kernel = false;
    uint64_t slots() const { return uint64_t(tokens) * top_k; }
    // Whether the routing build counts the slots (routing.glsl's route_slots: per-invocation counts over
    // the experts and a bucket) rather than each invocation placing at most one slot itself
    // (route_few_slots), and those counts in words (0 where it places them itself).
    bool counts_slots() const { return slots() > VKGMM_METADATA_INVOCATIONS; }
    uint64_t count_words() const { return counts_slots() ? uint64_t(VKGMM_METADATA_INVOCATIONS) * (num_local + 1) : 0; }
  };
  // The workspace in 32-bit words: the group metadata (offsets, visits, the indirect command and the
  // visit count), then with routing the counts as group sizes, the routing build's scratch, the row map
  // and the rows' weights, the per-slot results (combine), the fused combine's tile counters and the saved
  // pre-activations, and last the status slot (used when the app gives no status view).
  struct Workspace {
    uint64_t sizes = 0, counts = 0, map = 0, weight_rows = 0, partial = 0, tile_counts = 0, pre = 0, status = 0;
    uint64_t visit_count = 0;  // with visits: the count of real visits, which the persistent grid loops up to
    uint64_t items = 0, split_list = 0;  // with a device split: its work items and the combine's list
    VkDeviceSize bytes() const { return (status + 1) * 4; }
  };
  Workspace layout_workspace(const DeviceMetadata& d, const std::optional<Routing>& routing) const;
  // The epilogue's bias, f32 [count], is bound whole: refuses one past a binding.
  void check_bias(uint64_t count) const;

  struct Launch;
  // Sets the launch's device metadata and routing, and the workspace laid out for them (layout_workspace),
  // which it returns: the one layout the op's pushed offsets and the core's bindings both come from.
  const Workspace& use_device_metadata(Launch& launch, const DeviceMetadata& d, const std::optional<Routing>& routing) const;

  // ----- the launch, described by the op's part as one value, and the plan made from it -----
  struct Launch {
    OperandSpec lhs, rhs, out;  // existing_out (when the problem has one) is read with out's type and count
    bool existing_out = false;
    std::optional<uint64_t> bias;  // the epilogue's bias, f32 [count] at VKGMM_BINDING_BIAS (bias_off pushed)
    KernelShape shape;
    // The shape's K slices lie across neighbouring lanes (gmm's decode over rhs [n, k]): where the device
    // shuffles and ballots in compute shaders, the op's build that sums them with subgroup shuffles runs.
    bool slices_across_lanes = false;
    // The op's own constants (the shape's and the types' are the core's), and the offsets its 4-element
    // loads and stores need.
    std::vector<std::pair<uint32_t, uint32_t>> constants;
    VectorAlignment alignment;
    // A struct from shaders/interface.h whose operand offsets the core fills in at record time (set_push).
    PushBlock push;
    // The per-item workgroup grid (checked against the device's limits), or on the persistent grid its
    // fixed count of workgroups, at most one per item; any of them 0: nothing to dispatch.
    uint64_t grid[3] = {0, 0, 0};
    GridChoice grid_choice;
    // The metadata the kernel reads at VKGMM_BINDING_META: built on the host now, or on the device.
    std::vector<int32_t> host_metadata;
    std::optional<DeviceMetadata> device_metadata;
    std::optional<Routing> routing;
    // Routed: the plan is a part whose owner records it with another plan's routing (RoutingSource), so
    // the build that copies one is compiled now, and its own build only by a record() given none.
    bool routing_given = false;
    std::optional<SplitReduction> split_reduction;  // with host metadata only
    // Later passes of the op's kernel (gmm's tile heights per group, gmm_tile_heights.hpp): each its own
    // shape, per-item grid and push constants (its visits), its other constants and the grid choice the
    // first pass's. They follow the first pass without a barrier: each writes rows of out that no other
    // pass writes.
    struct Pass {
      KernelShape shape;
      uint64_t grid[3] = {0, 0, 0};
      PushBlock push;
    };
    std::vector<Pass> later_passes;  // with device metadata, one per bit of its heights, in order
    // Group sizes on the device that the kernel reads itself (gmm's SIZES_IN_KERNEL, interface.h), this
    // many of them (0: none), without device metadata: no build, no workspace.
    uint32_t kernel_sizes = 0;
    Workspace workspace;  // with device_metadata: its layout, whose offsets the op pushes (use_device_metadata)
    template <class Push>
    void set_push(const Push& p) {
      static_assert(abi::starts_with_operand_offsets<Push>());
      push.start<Push>() = p;
    }
  };
  // Sizes and checks the operands, lays out the metadata and workspace, picks the modules and creates the
  // pipelines (when there is a grid).
  void build(const Launch& launch);

  // ----- what the op's plan forwards -----
  const OperandSizes& sizes() const { return sizes_; }
  VkDeviceSize metadata_bytes() const { return host_metadata_.size() + own_workspace_.size(); }
  VkDeviceSize workspace_bytes() const { return uses_workspace() ? workspace_.bytes() : 0; }
  const Workspace& workspace_layout() const { return workspace_; }
  // With `given`: also the build that copies that routing (compiled here, so that record() with it cannot
  // fail after a check that passed).
  void check(const OperandViews& ops, const RoutingSource* given = nullptr) const;
  bool texel_loads(const OperandViews& ops) const;
  // build_only: only the metadata build (with device metadata: a routing build whose row map and counts
  // another pass reads) and its barrier. `given` (routed): the slots' order another plan's build wrote,
  // which this plan's build copies instead of ordering them again (routing_source).
  void record(VkCommandBuffer cb, const OperandViews& ops, bool build_only = false,
              const RoutingSource* given = nullptr) const;
  // A routed plan's routing as record() writes it into `workspace` (null: the plan's own; a part of
  // another plan has none), for another plan's record() of the same slots.
  RoutingSource routing_source(const BufferView& workspace) const;
  // The workspace record() uses with `given` as the operands' view: that view, or the plan's own (a part
  // of another plan given none: Error(internal)).
  BufferView workspace_view(const BufferView& given) const;
  // The pipelines record() binds, in dispatch order (the op's as planned: with 4-element loads where
  // the plan chose them; offsets that are not multiples of 4 take a variant of it, Kernel::variant_for),
  // then a routed plan's "metadata given", the build record() binds instead of its own with a given routing.
  // A plan whose owner gives its routing (Launch::routing_given) lists "metadata given" first, in place
  // of its own build.
  std::vector<PlannedPipeline> pipelines() const;
  // The push constants of the op's passes as planned (their operand offsets unset), in dispatch order.
  std::vector<PushBlock> pass_pushes() const;

 private:
  PlanCore(Context& ctx, Op op, WorkspaceOwner owner);
  struct Bound;
  Bound bind(const OperandViews& ops, const RoutingSource* given = nullptr) const;
  // The pipeline of the op's kernel (or a later pass's) for b's buffers and offsets (Kernel::variant_for).
  VkPipeline op_pipeline(const Kernel& kernel, const Bound& b) const;
  // Checks the group sizes (or ids), workspace and status views, fills b's metadata and routing
  // dispatches; returns the workspace's descriptor (what the op's kernel reads as its metadata).
  VkDescriptorBufferInfo bind_device_metadata(const OperandViews& ops, Bound& b, const RoutingSource* given) const;
  // The routing prologue's ids and weights and its push constants, into the metadata build (with `given`,
  // the build that copies that routing).
  void bind_routing(const OperandViews& ops, Dispatch& build, const RoutingSource* given) const;
  // A kernel that reads its routing's ids or its group sizes itself: those, a routing's weights and the
  // status word where the app gives one, bound at the op's route bindings, their offsets into its push
  // constants (set after them).
  void bind_kernel_reads(const OperandViews& ops, Dispatch& op) const;
  bool routes_in_kernel() const { return routing_ && routing_->in_kernel; }
  bool reads_in_kernel() const { return routes_in_kernel() || kernel_sizes_ > 0; }
  // The routing's words, laid out in the workspace from `words` on (layout_workspace); the next free word.
  static uint64_t layout_routing(const Routing& r, uint64_t words, Workspace& w);
  // A combine dispatch over out and existing_out from output row first_row on (rows of out_n elements),
  // reading `rows` x top_k results from word `partial` of the workspace.
  struct CombineRows {
    uint32_t first_row = 0, rows = 0, top_k = 0, out_n = 0;
    uint64_t partial = 0;
    bool listed = false;  // the device split's: rows from its list, at most `rows` of them (out_rows: the groups)
  };
  Dispatch bind_combine(const OperandViews& ops, const VkDescriptorBufferInfo& work, const CombineRows& c) const;
  // The combines after the kernel, in order: the routing's, or the split reduction's runs.
  std::vector<CombineRows> combine_rows() const;
  // The workgroups along a combine's columns: one per 64, at most the device's limit (the shader strides
  // over the rest).
  uint32_t combine_columns(uint32_t out_n) const {
    const uint64_t x = (uint64_t(out_n) + VKGMM_COMBINE_INVOCATIONS - 1) / VKGMM_COMBINE_INVOCATIONS;
    return static_cast<uint32_t>(std::min<uint64_t>(x, info().max_workgroup_count[0]));
  }
  bool dispatches() const { return grid_[0] != 0; }
  // The grid a launch's per-item grid dispatches: itself, or on the persistent grid one row of workgroups
  // (at least min_workgroups, at most one per item), checked against the device's limits.
  void dispatch_grid(const uint64_t (&items)[3], uint64_t min_workgroups, uint32_t (&grid)[3]) const;
  // Where the metadata build writes the indirect grid's command, then the visit count (kDispatchWords).
  static uint64_t dispatch_word(const DeviceMetadata& d) { return uint64_t(d.num_groups) + 1 + 2 * uint64_t(d.max_visits); }
  uint32_t dispatch_word() const { return static_cast<uint32_t>(dispatch_word(*device_meta_)); }
  // A combine dispatch of the slots runs after the kernel (a routed combine the kernel does not fuse).
  bool combines() const { return routing_ && routing_->combine && !routing_->fused_tiles && !routing_->in_kernel; }
  // The plan reads and writes a workspace (the app's or its own).
  bool uses_workspace() const { return device_meta_ || split_; }
  // tgmm's split reduction is built on the device (the kernel stores chunks' partial sums, a listed
  // combine sums them).
  bool device_split() const { return device_meta_ && device_meta_->split.slots > 0; }
  // The kernel's output: out, or with a combine the fp32 per-slot results in the workspace.
  DType kernel_out_type() const { return combines() ? DType::f32 : operands_[2].type; }

  std::shared_ptr<Context::Impl> ctx_;
  Op op_;
  OperandSpec operands_[3];  // lhs, rhs, out (existing_out: out's type and count)
  bool has_existing_ = false;
  OperandSizes sizes_;
  VkDeviceSize part_bytes_ = 0;  // > 0: operands are bound in parts of this size (the split layout)
  Kernel kernel_;
  Buffer host_metadata_;  // the metadata built on the host (none with device metadata)
  Buffer own_workspace_;  // device metadata's workspace, for operands that bring none (WorkspaceOwner::self)
  WorkspaceOwner workspace_owner_;
  uint32_t grid_[3] = {0, 0, 0};
  PushBlock push_;  // the op's, its operand offsets filled in at record
  // The later passes of the op's kernel (Launch::later_passes), as built.
  struct LaterPass {
    Kernel kernel;
    uint32_t grid[3] = {0, 0, 0};
    PushBlock push;
    uint64_t command = 0;  // with device metadata: its indirect command's word (later_command_word)
  };
  uint32_t kernel_sizes_ = 0;  // Launch::kernel_sizes
  std::vector<LaterPass> later_;
  bool has_bias_ = false;
  uint64_t bias_count_ = 0;  // 0 with a bias: one of no elements, never read
  // Device metadata: its parameters, the workspace's layout and the metadata module's pipeline.
  std::optional<DeviceMetadata> device_meta_;
  std::optional<Routing> routing_;
  std::optional<SplitReduction> split_;
  Workspace workspace_;
  // On CPU devices, refuses a metadata build or combine that would run past the driver's loop budget
  // (tiling.hpp, check_cpu_loop_budget), naming the argument that drives it (build(), before anything
  // is created).
  void check_loop_budget() const;
  // The metadata build's pipeline (null where the routing is given: own_build() compiles it on demand).
  VkPipeline meta_pipeline_ = VK_NULL_HANDLE, combine_pipeline_ = VK_NULL_HANDLE;
  bool routing_given_ = false;  // Launch::routing_given
  VkPipeline own_build() const;
  // The metadata build's specialization constants (given_routing: the build that copies a given routing).
  std::vector<uint32_t> meta_constants(bool given_routing = false) const;
  std::vector<uint32_t> combine_constants() const;  // the combine's
  // The plan takes the indirect grid (gmm's visit list, ContextOptions::device_grid), where its workspace
  // allows; the workspace holds the command and the visit count (kDispatchWords) after the visit list
  // either way.
  bool indirect_ = false;
  // The persistent grid (choose_grid): the kernel loops over the work items; with device metadata the
  // build packs the visits and writes their count, as for the indirect grid, and the dispatch is direct.
  bool persistent_ = false;
  bool built_ = false;
  static constexpr uint32_t kDispatchWords = VKGMM_DISPATCH_WORDS;  // VkDispatchIndirectCommand {x, y, z}, R
  static_assert(VKGMM_DISPATCH_COUNT_WORD == 3 && kDispatchWords == 4, "the command's 3 words, then R");
};

}  // namespace vkgmm
