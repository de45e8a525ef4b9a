// The plan core (see plan_core.hpp): the launch made into sizes, limits, pipelines and workspace.
// Binding and recording: host/plan_core_record.cpp.
#include "plan_core.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "metadata_loops.hpp"
#include "operands.hpp"
#include "options.hpp"
#include "plan_internals.hpp"
#include "problem_checks.hpp"
#include "texel_views.hpp"

namespace vkgmm {

PlanCore::PlanCore(Context& ctx, Op op, WorkspaceOwner owner)
    : ctx_(ContextInternals::shared(ctx)), op_(op), workspace_owner_(owner) {}

const DeviceInfo& PlanCore::info() const { return ctx_->dev.info; }
void PlanCore::check_in_buffer(const char* op, const char* name, const BufferView& view) const {
  check_view_in_buffer(*ctx_, op, name, view);
}
const DeviceInfo& PlanCore::tiling_info() const { return ctx_->tiling_device.of(ctx_->dev.info); }
const ResolvedOptions& PlanCore::options() const { return ctx_->dev.options; }

PlanCore::OperandLayout PlanCore::layout_operands(OperandSpec lhs, OperandSpec rhs, OperandSpec out,
                                                         bool existing_out) const {
  OperandLayout l;
  l.sizes.lhs = operand_bytes(lhs.type, lhs.count);
  l.sizes.rhs = operand_bytes(rhs.type, rhs.count);
  l.sizes.out = operand_bytes(out.type, out.count);
  l.sizes.existing_out = existing_out ? l.sizes.out : 0;
  check_block_operand_bytes(name(), "lhs", lhs.type, l.sizes.lhs);
  check_block_operand_bytes(name(), "rhs", rhs.type, l.sizes.rhs);
  // Inputs past one binding are read through the texel views of vkgmm's buffers, where the device reads
  // inputs that way (texel_views.hpp) and out fits one binding (the texel build's plain layout): up to what
  // a view reaches (2 GiB of f32 on lavapipe, beyond the split layout's 4 parts of 128 MiB, and without its
  // word-at-a-time loads: qwen3-ids-t1's f32 experts as one call).
  const bool texel_inputs = l.sizes.out + operand_binding_alignment(info()) <= info().max_storage_buffer_range &&
                            texel_loads_usable(info(), options().texel_loads, lhs.type, rhs.type);
  auto reach = [&](DType t) { return texel_inputs ? texel_reach_bytes(info(), t) : 0; };
  l.split = check_operand_limits(name(), info(),
                                 {{"lhs", l.sizes.lhs, reach(lhs.type)},
                                  {"rhs", l.sizes.rhs, reach(rhs.type)},
                                  {"out", l.sizes.out}});
  l.texel_unsplit = l.split && texel_inputs;
  if (l.split) l.part_bytes = split_part_bytes(info());
  // Operands bound in parts are read a word at a time; a plan that reads them through texel views instead
  // keeps its 4-element loads (Kernel::variant_for turns them off for the split build).
  l.vec4_allowed = (!l.split || l.texel_unsplit) && options().vec4_loads;
  return l;
}

PlanCore::Workspace PlanCore::layout_workspace(const DeviceMetadata& d, const std::optional<Routing>& routing) const {
  Workspace w;
  // group_offsets, the visit list (groups, then first rows), the indirect grid's command and the visit
  // count (there whichever grid runs, so the workspace's size does not depend on the option).
  uint64_t words = uint64_t(d.num_groups) + 1 + (d.visits ? 2 * uint64_t(d.max_visits) + kDispatchWords : 0);
  w.visit_count = dispatch_word(d) + VKGMM_DISPATCH_COUNT_WORD;
  // The later passes' lists, each with its command and count (tile heights per group).
  if (d.visits && d.heights) words = later_visits_word(d, uint32_t(std::popcount(d.heights)) + 1);
  if (d.split.slots) {
    // The work items, the combine's list, then the chunks' slots from a multiple of 4 words (the kernel
    // stores them as out, 4 columns at a time).
    w.items = words;
    words += uint64_t(VKGMM_TGMM_ITEM_WORDS) * d.max_visits;
    w.split_list = words;
    words = (words + VKGMM_SPLIT_LIST_HEAD + d.split.slots + 3) / 4 * 4;
    w.partial = words;
    words += uint64_t(d.split.slots) * d.split.group_elements;
  }
  // (A routing's per-slot results would take `partial` too: no routed plan splits its reduction.)
  if (routing && d.split.slots) throw Error(Status::internal, std::string(name()) + ": a routed split reduction");
  if (routing) words = layout_routing(*routing, words, w);
  w.status = words;
  if (w.bytes() > info().max_storage_buffer_range)
    throw Error(Status::unsupported,
                std::string(name()) + ": the workspace (" + std::to_string(w.bytes()) +
                    " bytes) exceeds maxStorageBufferRange" +
                    (routing && routing->pre_n ? ": it holds every slot's fp32 pre-activation; route fewer tokens per call"
                     : routing && routing->combine ? ": it holds every slot's fp32 result; combine fewer tokens per call"
                     : routing ? ": it holds the routing's row map; route fewer tokens per call"
                               : ": use a larger tm"));
  return w;
}

const PlanCore::Workspace& PlanCore::use_device_metadata(Launch& launch, const DeviceMetadata& d,
                                                                 const std::optional<Routing>& routing) const {
  launch.device_metadata = d;
  launch.routing = routing;
  launch.workspace = layout_workspace(d, routing);
  return launch.workspace;
}

void PlanCore::check_bias(uint64_t count) const {
  if (count * 4 > info().max_storage_buffer_range)
    throw Error(Status::unsupported, std::string(name()) + ": bias: " + std::to_string(count * 4) +
                                         " bytes exceed maxStorageBufferRange (" +
                                         std::to_string(info().max_storage_buffer_range) + "), bound whole");
}

void PlanCore::check_loop_budget() const {
  const LoopCount build = metadata_build_loops(*device_meta_, routing_ ? &*routing_ : nullptr);
  check_cpu_loop_budget(info(), name(), build.iterations, "the metadata build for " + build.what, build.remedy);
  if (!combines()) return;
  const LoopCount sum = combine_loops(routing_->top_k, routing_->out_n, combine_columns(routing_->out_n));
  check_cpu_loop_budget(info(), name(), sum.iterations, "the combine of " + sum.what, sum.remedy);
}

PlanCore::GridChoice PlanCore::choose_grid(Grid requested, uint64_t items, uint64_t loop_iterations,
                                                   uint64_t uneven_loops) const {
  GridChoice g;
  g.persistent = persistent_grid(name(), requested, options(), info()) && items <= UINT32_MAX;
  if (g.persistent && info().type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    // Half of llvmpipe's budget (kCpuLoopIterations) for the even share, the other half for the items
    // not dividing evenly.
    constexpr uint64_t kLoopBudget = kCpuLoopIterations / 2;
    g.min_workgroups = std::max<uint64_t>((loop_iterations + kLoopBudget - 1) / kLoopBudget, 1);
    // The grid is one row of at most maxComputeWorkGroupCount[0] workgroups (build): a problem needing
    // more for its share to fit keeps the per-item grid too (each item is checked on its own there).
    if (g.min_workgroups * 2 > items || uneven_loops > kLoopBudget || g.min_workgroups > info().max_workgroup_count[0])
      g = GridChoice{};
  }
  return g;
}

void PlanCore::build(const Launch& l) {
  if (built_) throw Error(Status::internal, std::string(name()) + ": the plan was built twice");
  built_ = true;
  // The operands, bound as layout_operands says.
  operands_[0] = l.lhs;
  operands_[1] = l.rhs;
  operands_[2] = l.out;
  has_existing_ = l.existing_out;
  const OperandLayout layout = layout_operands(l.lhs, l.rhs, l.out, l.existing_out);
  sizes_ = layout.sizes;
  kernel_.split = layout.split;
  kernel_.texel_unsplit = layout.texel_unsplit;
  part_bytes_ = layout.part_bytes;
  if (l.bias) {
    check_bias(*l.bias);
    has_bias_ = true;
    bias_count_ = *l.bias;
  }
  persistent_ = l.grid_choice.persistent;
  // The metadata: built on the device by record() into the workspace, or on the host now.
  if (l.device_metadata) {
    device_meta_ = l.device_metadata;
    routing_ = l.routing;
    // gmm's list may run on the indirect grid (options; record() may still fall back per workspace); the
    // persistent grid's dispatch is direct.
    const DeviceGrid grid = ctx_->tiling_device.grid.value_or(device_grid(options(), info()));
    indirect_ = device_meta_->visits && !persistent_ && grid == DeviceGrid::indirect;
    workspace_ = l.workspace;
  } else {
    if (l.routing && !l.routing->in_kernel)
      throw Error(Status::internal, std::string(name()) + ": routing needs the device metadata");
    routing_ = l.routing;
    const VkDeviceSize bytes = l.host_metadata.size() * sizeof(int32_t);
    if (bytes > info().max_storage_buffer_range)
      throw Error(Status::unsupported, std::string(name()) + ": the metadata (" + std::to_string(bytes) +
                                           " bytes) exceeds maxStorageBufferRange: use a larger tm");
    if (!l.host_metadata.empty() && !options().compile_only) {  // compile_only: nothing will read it
      Context owner = ContextInternals::adopt(ctx_);
      host_metadata_ = plan_buffer(owner, bytes, std::string(name()) + ": its metadata");
      host_metadata_.upload(l.host_metadata.data(), bytes);
    }
    if (l.split_reduction) {
      split_ = l.split_reduction;
      // The slots from word 0; the status word, unused, last.
      workspace_ = Workspace{};
      workspace_.status = split_->words();
      if (workspace_.bytes() > info().max_storage_buffer_range)
        throw Error(Status::internal, std::string(name()) + ": the split reduction's workspace exceeds maxStorageBufferRange");
    }
  }
  if (l.kernel_sizes && (l.device_metadata || l.routing || l.split_reduction))
    throw Error(Status::internal, std::string(name()) + ": sizes read in the kernel with metadata, routing or a split");
  kernel_sizes_ = l.kernel_sizes;
  if ((kernel_sizes_ || routes_in_kernel()) && !options().compile_only) {
    // The descriptor of the read-only bindings a kernel reading its sizes or ids never touches: a buffer
    // of the plan's own.
    const uint32_t zero[4] = {0, 0, 0, 0};
    Context owner = ContextInternals::adopt(ctx_);
    host_metadata_ = plan_buffer(owner, sizeof zero, std::string(name()) + ": its metadata");
    host_metadata_.upload(zero, sizeof zero);
  }
  if (!l.later_passes.empty() && l.split_reduction)
    throw Error(Status::internal, std::string(name()) + ": later passes of the kernel with a split reduction");
  if (l.device_metadata && l.later_passes.size() != size_t(std::popcount(l.device_metadata->heights)))
    throw Error(Status::internal, std::string(name()) + ": later passes other than the device metadata's heights");
  // The grid: per item, or on the persistent grid one row of workgroups looping over the items.
  if (l.grid[0] && l.grid[1] && l.grid[2]) {
    dispatch_grid(l.grid, l.grid_choice.min_workgroups, grid_);
    if (!l.push.bytes) throw Error(Status::internal, std::string(name()) + ": the op set no push constants");
    push_ = l.push;
    // The kernel's constants: its shape, the ones every op shares (types, existing_out), the op's own.
    kernel_.set_shape(l.shape);
    kernel_.set(VKGMM_ID_LHS_TYPE, uint32_t(operands_[0].type));
    kernel_.set(VKGMM_ID_RHS_TYPE, uint32_t(operands_[1].type));
    // With a combine, existing_out is the combine's to add.
    kernel_.set(VKGMM_ID_OUT_TYPE, uint32_t(kernel_out_type()));
    kernel_.set(VKGMM_ID_HAS_EXISTING, has_existing_ && !combines());
    kernel_.set(VKGMM_ID_PERSISTENT, persistent_);
    for (const auto& [id, value] : l.constants) kernel_.set(id, value);
    kernel_.alignment = l.alignment;
    constexpr VkSubgroupFeatureFlags kSliceOperations = VK_SUBGROUP_FEATURE_SHUFFLE_BIT | VK_SUBGROUP_FEATURE_BALLOT_BIT;
    kernel_.subgroup_slices =
        l.slices_across_lanes && (ctx_->dev.compute_subgroup_operations & kSliceOperations) == kSliceOperations;
    for (size_t i = 0; i < l.later_passes.size(); ++i) {
      const Launch::Pass& pass = l.later_passes[i];
      if (!pass.grid[0] || !pass.grid[1] || !pass.grid[2]) continue;  // no visits: nothing to dispatch
      LaterPass& later = later_.emplace_back();
      if (l.device_metadata) later.command = later_command_word(*l.device_metadata, uint32_t(i + 1));
      later.kernel = kernel_;
      later.kernel.set_shape(pass.shape);
      dispatch_grid(pass.grid, l.grid_choice.min_workgroups, later.grid);
      later.push = pass.push;
    }
  }
  if (device_meta_) check_loop_budget();
  if (dispatches()) {
    kernel_.choose_modules(op_, info(), options(), operands_[0].type, operands_[1].type, kernel_out_type());
    kernel_.create(*ctx_, part_bytes_, eager_pipelines(options(), info()));
    for (LaterPass& later : later_) {
      later.kernel.choose_modules(op_, info(), options(), operands_[0].type, operands_[1].type, kernel_out_type());
      later.kernel.create(*ctx_, part_bytes_, eager_pipelines(options(), info()));
    }
  }
  // The plan's own workspace, for operands that bring none.
  if (uses_workspace() && !options().compile_only && workspace_owner_ == WorkspaceOwner::self) {
    Context owner = ContextInternals::adopt(ctx_);
    own_workspace_ = plan_buffer(owner, workspace_.bytes(), std::string(name()) + ": its workspace");
  }
  if (device_meta_) {
    const ShaderCode code = metadata_shader();
    routing_given_ = routing_ && l.routing_given;
    if (!routing_given_) meta_pipeline_ = ctx_->pipeline(code.code, code.words, meta_constants());
    // A routed plan's build of another plan's routing (record() with a RoutingSource: the MoE layer's and
    // the routed backward's passes) is the same module with ROUTE_GIVEN: compiled now where the plan's
    // owner gives the routing or the plan compiles every pipeline record() can bind, else (and cached by
    // the context) at the first record or listing that asks for it.
    if (routing_ && (routing_given_ || eager_pipelines(options(), info())))
      ctx_->pipeline(code.code, code.words, meta_constants(true));
  }
  const std::vector<CombineRows> sums = dispatches() ? combine_rows() : std::vector<CombineRows>{};
  for (const CombineRows& c : sums) {
    const SpreadYZ rows = spread_yz(c.rows, info());
    check_grid(name(), info(), combine_columns(c.out_n), rows.y, rows.z);
  }
  if (!sums.empty()) {
    const ShaderCode code = combine_shader();
    combine_pipeline_ = ctx_->pipeline(code.code, code.words, combine_constants());
  }
  ctx_->log.throw_if_any();
}

void PlanCore::dispatch_grid(const uint64_t (&items)[3], uint64_t min_workgroups, uint32_t (&grid)[3]) const {
  uint64_t x = items[0], y = items[1], z = items[2];
  if (persistent_) {
    const uint64_t wanted = std::max<uint64_t>(persistent_workgroups(options(), info()), min_workgroups);
    x = std::min<uint64_t>({x * y * z, wanted, info().max_workgroup_count[0]});
    y = z = 1;
  }
  check_grid(name(), info(), x, y, z);
  grid[0] = static_cast<uint32_t>(x);
  grid[1] = static_cast<uint32_t>(y);
  grid[2] = static_cast<uint32_t>(z);
}

// The status word's bits as the shaders set them are the public ones.
static_assert(VKGMM_STATUS_NEGATIVE_SIZE == device_status::negative_size);
static_assert(VKGMM_STATUS_SUM_ABOVE_M == device_status::sum_above_m);
static_assert(VKGMM_STATUS_VISITS_CUT == device_status::visits_cut);
static_assert(VKGMM_STATUS_BAD_ID == device_status::bad_id);
static_assert(VKGMM_STATUS_BAD_ROUTING == device_status::bad_routing);

std::vector<PushBlock> PlanCore::pass_pushes() const {
  std::vector<PushBlock> out;
  if (!dispatches()) return out;
  out.push_back(push_);
  for (const LaterPass& pass : later_) out.push_back(pass.push);
  return out;
}

VkPipeline PlanCore::own_build() const {
  if (meta_pipeline_) return meta_pipeline_;
  const ShaderCode code = metadata_shader();
  return ctx_->pipeline(code.code, code.words, meta_constants());
}

std::vector<PlannedPipeline> PlanCore::pipelines() const {
  std::vector<PlannedPipeline> out;
  // A routed plan's build of another plan's routing (record() with a RoutingSource), from the context's
  // cache where build() compiled it.
  const auto given_build = [&] {
    const ShaderCode code = metadata_shader();
    const std::vector<uint32_t> constants = meta_constants(true);
    out.push_back({"metadata given", code, constants, false, ctx_->pipeline(code.code, code.words, constants)});
  };
  if (device_meta_ && routing_given_) given_build();
  else if (device_meta_) out.push_back({"metadata", metadata_shader(), meta_constants(), false, meta_pipeline_});
  if (dispatches()) {
    // Where there is a texel build, vkgmm's own buffers take it, and it is the one build() compiled first.
    const Kernel::Variant v = kernel_.planned();
    out.push_back({"op", v.texel ? kernel_.texel_code : kernel_.code, kernel_.constants, kernel_.split && !v.texel,
                   kernel_.pipeline(*ctx_, v)});
    for (size_t i = 0; i < later_.size(); ++i) {
      const Kernel& k = later_[i].kernel;
      out.push_back({"op", v.texel ? k.texel_code : k.code, k.constants, k.split && !v.texel, k.pipeline(*ctx_, v),
                     static_cast<uint32_t>(i + 1)});
    }
  }
  if (combine_pipeline_) out.push_back({"combine", combine_shader(), combine_constants(), false, combine_pipeline_});
  if (device_meta_ && routing_ && !routing_given_) given_build();
  return out;
}

}  // namespace vkgmm
