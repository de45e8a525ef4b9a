// The plan core at record time (see plan_core.hpp): the views checked and bound, and the plan's dispatches
// (metadata build, op, combine) recorded in order with their barriers.
#include <algorithm>
#include <iterator>
#include <string>

#include "plan_core.hpp"
#include "operands.hpp"
#include "options.hpp"
#include "problem_checks.hpp"
#include "shader_modules.hpp"
#include "dispatch.hpp"
#include "texel_views.hpp"

namespace vkgmm {

// The views checked and resolved: descriptors in binding order, push constants with the operands'
// offsets, and the inputs' texel views (texel false: read as storage buffers).
struct PlanCore::Bound {
  // With device metadata: the metadata build (its routing prologue reading the ids and weights).
  std::optional<Dispatch> build;
  // The op's kernel; count 0: nothing to dispatch. Its pipeline is op_pipeline's, chosen at record.
  Dispatch op;
  // The later passes of the op's kernel (Launch::later_passes), bound as `op` with their own grids and
  // push constants; their pipelines op_pipeline's too.
  std::vector<Dispatch> later;
  // The combines after the kernel: the ordered sums of the slots' results (a routed combine the kernel
  // does not fuse) or of a split reduction's chunks, into out.
  std::vector<Dispatch> combines;
  const abi::OperandOffsets& offsets() const { return op.push.as<abi::OperandOffsets>(); }
};

PlanCore::Bound PlanCore::bind(const OperandViews& ops, const RoutingSource* given) const {
  const char* op = name();
  options().check_records(op);
  // Which views the plan takes, then every given view inside its buffer, before the rules between views
  // (binding checks each again).
  PlanFacts facts;
  // A routing in the kernel takes a status word as the device metadata's build does.
  facts.existing = has_existing_, facts.device_metadata = device_meta_.has_value() || reads_in_kernel();
  facts.routed = routing_.has_value();
  facts.combine = routing_ && routing_->combine, facts.bias = has_bias_;
  facts.bias_read = bias_count_ > 0 && dispatches();  // nothing to dispatch (m = 0): nothing reads it
  facts.workspace = uses_workspace();
  facts.app_workspace = workspace_owner_ == WorkspaceOwner::app;
  check_operand_presence(op, ops, facts);
  check_existing_view(op, ops.existing_out, ops.out);
  for (size_t o = 0; o < kOperandCount; ++o) check_view_in_buffer(*ctx_, op, kOperandRows[o].name, ops[OperandId(o)]);
  if (given && !routing_) throw Error(Status::internal, std::string(op) + ": a routing given to an unrouted plan");
  Bound b;
  b.op.push = push_;  // the operands' offsets filled in below
  VkDescriptorBufferInfo meta{host_metadata_.handle(), 0, host_metadata_.size()};
  if (device_meta_) meta = bind_device_metadata(ops, b, given);
  // The workspace: the metadata's buffer with device metadata; a split reduction's, the app's or the plan's own.
  VkDescriptorBufferInfo work = meta;
  if (split_) {
    check_workspace_view(op, ops.workspace, workspace_.bytes(), info());
    const BufferView w = workspace_view(ops.workspace);
    work = {w.buffer, w.offset, workspace_.bytes()};
  }
  // The overlap rules over the views as bound: the workspace as far as the plan uses it, or the plan's own.
  // A workspace given to a plan that uses none (one reading its ids or sizes in the kernel) is never bound:
  // it may lie anywhere.
  OperandViews bound_views = ops;
  bound_views.workspace = uses_workspace() ? BufferView{work.buffer, work.offset, work.range} : BufferView{};
  check_operand_overlaps(op, bound_views);
  if (!dispatches()) return b;

  // The inputs through their buffers' texel views where the plan has a texel build and both have views
  // (their pushed offsets then count from the buffers' starts); else read as storage buffers, in parts
  // where the plan's operands need them.
  uint32_t texel_offsets[2] = {0, 0};
  if (kernel_.texel_code.code && operands_[0].count && operands_[1].count) {
    bind_texel_inputs(*ctx_, ops.lhs, operands_[0].type, operands_[0].count, ops.rhs, operands_[1].type,
                      operands_[1].count, b.op.texels, texel_offsets[0], texel_offsets[1]);
    b.op.texel = b.op.texels[0] != VK_NULL_HANDLE;
  }
  const bool split = kernel_.split && !b.op.texel;
  // The first four rows of the operand table, in binding order.
  auto name_of = [](int o) { return kOperandRows[o].name; };
  auto view_of = [&](int o) -> const BufferView& { return ops[OperandId(o)]; };
  BoundOperand bound[4];
  for (int o = 0; o < 4; ++o) {
    const OperandSpec& spec = operands_[o < 3 ? o : 2];  // existing_out: out's type and count
    if (o == 3 && !has_existing_) {
      bound[3] = bound[2];  // the shader reads none: any valid descriptor
    } else if (!spec.count) {
      bound[o].info = meta;  // an input never read
    } else if (o < 2 && b.op.texel) {
      // The texel build reads the inputs only through their views: these bindings, never read, take the
      // metadata's descriptor (an input may be past what one binding addresses).
      bound[o] = bind_unread_operand(*ctx_, op, name_of(o), view_of(o), spec.type, spec.count, !kernel_.storage16, meta);
      bound[o].element_offset = texel_offsets[o];
    } else {
      const VkDeviceSize bytes = operand_bytes(spec.type, spec.count);
      if (o < 2 && kernel_.texel_unsplit && bytes > part_bytes_ * kMaxParts)
        throw Error(Status::unsupported,
                    std::string(op) + ": " + name_of(o) + ": " + std::to_string(bytes) +
                        " bytes are more than vkgmm binds as a storage buffer on this device (" +
                        std::to_string(kMaxParts) + " parts of maxStorageBufferRange " +
                        std::to_string(info().max_storage_buffer_range) +
                        "); inputs this large are read through texel views, which this call cannot use: both lhs "
                        "and rhs must be in buffers from Context::create_buffer or borrow_buffer (with texel "
                        "usage), each within what its view reaches (Context::max_whole_input_bytes)");
      bound[o] = bind_operand(*ctx_, op, name_of(o), view_of(o), spec.type, spec.count, split ? part_bytes_ : 0,
                              !kernel_.storage16);
    }
  }
  for (const CombineRows& c : combine_rows()) {
    Dispatch sum = bind_combine(ops, work, c);
    if (!sum.grid[1]) continue;  // no rows: nothing to sum
    // Each after a barrier: the combines write disjoint rows of out, but each binds out and existing_out
    // whole.
    b.combines.push_back(sum);
  }
  if (combines()) {
    // The kernel writes the per-slot results into the workspace: out and existing_out are the combine's.
    // In parts where the kernel is split, whose stores send word i to part i >> PART_SHIFT: one binding
    // would take the words past the first part's as the first part's again.
    bound[2] = bound_in_parts(meta.buffer, meta.offset, meta.range, split ? part_bytes_ : 0);
    bound[2].element_offset = static_cast<uint32_t>(workspace_.partial);
    bound[3] = bound[2];
  }
  // A binding the dispatch leaves unused: out's view or the metadata's, by the module's declared access.
  auto unused = [&](uint32_t binding) { return declares_writable(op_, binding) ? bound[2].info : meta; };
  BoundOperand bias;
  bias.info = unused(kBias);  // no bias, or one of no elements (no local expert)
  if (bias_count_) bias = bind_operand(*ctx_, op, "bias", ops.bias, DType::f32, bias_count_, 0, false);
  if (split_ || device_split()) {
    // The split reduction's chunk slots (VKGMM_BINDING_TGMM_PARTIAL), which the kernel writes.
    bias.info = work;
    bias.element_offset = static_cast<uint32_t>(workspace_.partial);
  }
  b.op.count = layout_descriptors(bound, meta, bias.info, split, b.op.infos);
  if (op_ == Op::gmm) {
    // gmm's module declares the route bindings in every build. Routed or sized in the kernel: the ids or
    // sizes there (a given routing is not read: there is no build). Routed with a build: the workspace
    // the kernel writes, from its first word as the metadata's view.
    b.op.routes = true;
    for (uint32_t r = 0; r < kNumRouteBindings; ++r) b.op.route[r] = unused(kRouteWeights + r);
    if (reads_in_kernel()) bind_kernel_reads(ops, b.op);
    if (routing_ && device_meta_ && (routing_->fused_tiles || routing_->pre_n))
      b.op.route[kRouteWorkspace - kRouteWeights] = meta;
  }
  abi::OperandOffsets& off = b.op.push.as<abi::OperandOffsets>();
  off.lhs_off = bound[0].element_offset;
  off.rhs_off = bound[1].element_offset;
  off.out_off = bound[2].element_offset;
  off.ex_off = bound[3].element_offset;
  off.bias_off = bias.element_offset;
  std::copy(grid_, grid_ + 3, b.op.grid);
  if (split_) {
    // Earlier work of this plan may still read or write the slots of the workspace (its combines) and
    // out: the kernel writes both.
    b.op.wait_for = b.op.before_own = VK_ACCESS_SHADER_WRITE_BIT;
  }
  for (const LaterPass& pass : later_) {
    Dispatch& d = b.later.emplace_back(b.op);
    d.push = pass.push;
    d.push.as<abi::OperandOffsets>() = off;
    std::copy(pass.grid, pass.grid + 3, d.grid);
    // On the indirect grid, its own command (the first pass's barrier after the build makes every list
    // and command visible).
    if (d.indirect_buffer) d.indirect_offset = work.offset + pass.command * 4;
    // Where the options ask (ResolvedOptions::pass_barrier): after the passes before it, which write out
    // and may read existing_out in the same ranges, though never the same elements, and may write the
    // workspace's binding (a routed kernel's slots) around its indirect command.
    if (options().pass_barrier) {
      d.wait_for = VK_ACCESS_SHADER_WRITE_BIT;
      d.before_own = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     (d.indirect_buffer ? VK_ACCESS_INDIRECT_COMMAND_READ_BIT : 0);
      d.extra_after = d.indirect_buffer ? VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT : 0;
    }
  }
  if (b.build) {
    // The metadata visible to the dispatch (read after write), the command to its indirect read; a routed
    // kernel's writes to the workspace after the build's (the tile counters it zeroed).
    const bool writes_workspace = routing_ && (routing_->fused_tiles || routing_->pre_n);
    b.op.wait_for = VK_ACCESS_SHADER_WRITE_BIT;
    b.op.before_own = VK_ACCESS_SHADER_READ_BIT | (writes_workspace ? VK_ACCESS_SHADER_WRITE_BIT : 0) |
                      (b.op.indirect_buffer ? VK_ACCESS_INDIRECT_COMMAND_READ_BIT : 0);
    b.op.extra_after = b.op.indirect_buffer ? VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT : 0;
  }
  return b;
}

VkDescriptorBufferInfo PlanCore::bind_device_metadata(const OperandViews& ops, Bound& b,
                                                          const RoutingSource* given) const {
  const char* op = name();
  const DeviceMetadata& d = *device_meta_;
  const VkDeviceSize workspace_bytes = workspace_.bytes();
  // The workspace is read from its first word by the op's kernel: its offset must be a binding offset.
  check_workspace_view(op, ops.workspace, workspace_bytes, info());
  const BufferView given_or_own = workspace_view(ops.workspace);
  VkDescriptorBufferInfo work{given_or_own.buffer, given_or_own.offset, workspace_bytes};
  // The sizes and the status word: int32 / uint32 words at any 4-byte offset (read, written once). A
  // routed problem's sizes are the routing build's counts, in the workspace.
  BoundOperand sizes;
  sizes.info = work;
  sizes.element_offset = static_cast<uint32_t>(workspace_.sizes);
  if (!routing_) sizes = bind_words(*ctx_, op, "group_sizes", ops.group_sizes, d.num_groups, "int32");
  Dispatch& build = b.build.emplace();
  // Earlier work of this plan may still read the workspace (write after read), its indirect command too
  // when the plan takes that grid, or have written it (write after write: the fused combine's per-slot
  // results and tile counters; that needs the earlier writes made available, not only finished). The
  // build binds the workspace where its module reads too (the given routing's, the weights'): those
  // reads after the earlier writes as well.
  build.wait_for = VK_ACCESS_SHADER_WRITE_BIT;
  build.before_own = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  build.extra_before = indirect_ ? VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT : 0;
  // A given routing's build is bind_routing's.
  build.pipeline = given ? VK_NULL_HANDLE : own_build();
  build.grid[0] = build.grid[1] = build.grid[2] = 1;
  abi::MetadataPush& m = build.push.start<abi::MetadataPush>();
  m.sizes_off = sizes.element_offset;
  VkDescriptorBufferInfo status = work;  // no status view: the workspace's last word takes it
  m.status_off = static_cast<uint32_t>(workspace_.status);
  if (ops.status.buffer) {
    const BoundOperand s = bind_words(*ctx_, op, "status", ops.status, 1, "uint32");
    status = s.info;
    m.status_off = s.element_offset;
  }
  m.num_groups = d.num_groups;
  m.group_offset = d.group_offset;
  m.num_local = d.num_local;
  m.m = d.m;
  m.tm = d.tm;
  m.fill_rows = d.fill_rows;
  m.visits_off = d.num_groups + 1;
  m.max_visits = d.max_visits;
  m.later_visits = d.later_visits;
  if (d.split.slots) {
    m.visits_off = static_cast<uint32_t>(workspace_.items);
    m.split_off = static_cast<uint32_t>(workspace_.split_list);
    m.split_slots = d.split.slots;
    m.split_step = d.split.step;
    m.split_blocks = d.split.blocks;
    m.split_concurrent = d.split.concurrent;
  }
  // The indirect grid, when the plan takes it and the workspace can be read as an indirect buffer:
  // vkgmm's own buffers can; an app's only when lent with indirect_usage; an unregistered VkBuffer's
  // usage cannot be seen, so it gets the upper-bound grid.
  const std::optional<OwnBuffer> own = ctx_->buffers.find(work.buffer);
  if (persistent_ && d.visits && dispatches()) {
    // The visits packed first and their count after the (unused) command, in any workspace: the
    // persistent grid's workgroups loop up to that count.
    m.dispatch_off = dispatch_word();
    m.grid_x = grid_[0];
    m.grid_y = grid_[1];
  } else if (indirect_ && dispatches() && own && own->indirect) {
    m.dispatch_off = dispatch_word();
    m.grid_x = grid_[0];
    m.grid_y = grid_[1];  // min(max_visits, maxComputeWorkGroupCount[1])
    // The op's dispatch reads the command the build writes there.
    b.op.indirect_buffer = work.buffer;
    b.op.indirect_offset = work.offset + VkDeviceSize(m.dispatch_off) * 4;
  }
  // Bindings the module does not use repeat the workspace (any valid descriptor).
  build.bind_all(work);
  build.infos[VKGMM_BINDING_META_SIZES] = sizes.info;
  build.infos[VKGMM_BINDING_META_STATUS] = status;
  if (routing_) bind_routing(ops, build, given);
  return work;
}

void PlanCore::check(const OperandViews& ops, const RoutingSource* given) const {
  // Also compiles the pipeline these offsets need where the plan has not, so record() cannot fail after a
  // check that passed.
  Bound b = bind(ops, given);
  if (!b.op.count) return;
  op_pipeline(kernel_, b);
  for (const LaterPass& pass : later_) op_pipeline(pass.kernel, b);
}

VkPipeline PlanCore::op_pipeline(const Kernel& kernel, const Bound& b) const {
  const abi::OperandOffsets& o = b.offsets();
  return kernel.pipeline(*ctx_, kernel.variant_for(o.lhs_off, o.rhs_off, o.out_off, b.op.texel));
}

bool PlanCore::texel_loads(const OperandViews& ops) const { return bind(ops).op.texel; }

void PlanCore::record(VkCommandBuffer cb, const OperandViews& ops, bool build_only,
                          const RoutingSource* given) const {
  if (cb == VK_NULL_HANDLE)
    throw Error(Status::invalid_argument, std::string(name()) + ": command buffer is VK_NULL_HANDLE");
  Bound b = bind(ops, given);
  const bool op = b.op.count && !build_only;
  // The op's pipeline for these offsets first: they may be refused, and nothing is recorded then.
  if (op) {
    b.op.pipeline = op_pipeline(kernel_, b);
    for (size_t i = 0; i < later_.size(); ++i) b.later[i].pipeline = op_pipeline(later_[i].kernel, b);
  }
  // The metadata build runs even when the op has nothing to dispatch (gmm with m = 0): the status word
  // is written by every record().
  if (b.build) b.build->record(*ctx_, cb);
  if (op) b.op.record(*ctx_, cb);
  if (op)
    for (const Dispatch& pass : b.later) pass.record(*ctx_, cb);
  if (op)
    for (const Dispatch& sum : b.combines) sum.record(*ctx_, cb);
  // A build with no op after it (gmm with m = 0, or only the build asked for) still ends in the barrier
  // that makes its writes (the status word, the routing) visible to what follows in the same queue.
  if (b.build && !op) compute_barrier(cb, VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT);
}

BufferView PlanCore::workspace_view(const BufferView& given) const {
  if (given.buffer) return {given.buffer, given.offset, workspace_bytes()};
  if (uses_workspace() && workspace_owner_ == WorkspaceOwner::app) refuse_missing_workspace(name());
  if (uses_workspace() && workspace_owner_ == WorkspaceOwner::composite)
    throw Error(Status::internal, std::string(name()) + ": workspace: a part of another plan was given none");
  return own_workspace_.handle() ? BufferView{own_workspace_.handle(), 0, workspace_bytes()} : BufferView{};
}

}  // namespace vkgmm
