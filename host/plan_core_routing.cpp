// The plan core's routing and combine (see plan_core.hpp): a routed op's stage before it, the routing
// build (shaders/routing.glsl, the metadata module's prologue: the slots ordered by expert into a row map
// and counts), and after it the ordered sum of each token's slots (shaders/combine.comp), which a split
// reduction's chunks take too: their words in the workspace, the metadata build's and the combine's
// constants, and their bindings.
#include "plan_core.hpp"

#include <algorithm>
#include <string>

#include "context_impl.hpp"
#include "interface.hpp"
#include "operands.hpp"
#include "problem_checks.hpp"
#include "shader_modules.hpp"

namespace vkgmm {

uint64_t PlanCore::layout_routing(const Routing& r, uint64_t words, Workspace& w) {
  const uint64_t slots = r.slots();
  w.sizes = words;
  words += r.num_local;
  w.counts = words;
  words += r.count_words();
  w.map = words;
  words += slots;
  w.weight_rows = words;
  if (r.combine) words += slots;
  // The per-slot results start at a multiple of 4 words: the kernel stores (and the fused combine
  // reads) 4 adjacent columns as one vector there.
  words = (words + 3) / 4 * 4;
  w.partial = words;
  if (r.combine) words += slots * r.out_n;
  w.tile_counts = words;
  words += r.fused_tiles;
  // The saved pre-activations, [slots, pre_n] (none with pre_n = 0), from a multiple of 4 words: the
  // backward's gradient pass reads 4 adjacent columns as one vector.
  words = (words + 3) / 4 * 4;
  w.pre = words;
  words += slots * r.pre_n;
  return words;
}

std::vector<uint32_t> PlanCore::meta_constants(bool given_routing) const {
  // Routed, the routing's counts in shared memory on GPUs where they fit beside the build's own few words
  // (on CPU devices shared memory is the host's memory, as the workspace is); none where each invocation
  // places at most one slot itself (routing.glsl's route_few_slots).
  const uint64_t words = routing_ ? routing_->count_words() : 0;
  constexpr uint64_t kBuildSharedBytes = 1024;  // part[], flags, total_tiles, with room to spare
  const bool shared_counts = words > 0 && !given_routing && tiling_info().type != VK_PHYSICAL_DEVICE_TYPE_CPU &&
                             (words + 1) * 4 + kBuildSharedBytes <= info().max_shared_memory;
  return spec_constants({
      {VKGMM_ID_INVOCATIONS, VKGMM_METADATA_INVOCATIONS},
      {VKGMM_ID_META_VISITS, device_meta_->visits},
      {VKGMM_ID_META_TGMM_SPLIT, device_split()},
      {VKGMM_ID_META_HEIGHTS, device_meta_->heights},
      {VKGMM_ID_META_VISIT_OVERHEAD, device_meta_->heights ? device_meta_->overhead : 0},
      // Routed: the build starts with the slots' routing (shaders/routing.glsl), in the same dispatch.
      {VKGMM_ID_META_ROUTE, routing_.has_value()},
      {VKGMM_ID_META_ROUTE_WEIGHTED, routing_ && routing_->combine},
      {VKGMM_ID_META_ROUTE_GIVEN, given_routing},
      {VKGMM_ID_META_ROUTE_SHARED_COUNTS, shared_counts ? static_cast<uint32_t>(words) : 0u},
  });
}

std::vector<uint32_t> PlanCore::combine_constants() const {
  return spec_constants({{VKGMM_ID_INVOCATIONS, VKGMM_COMBINE_INVOCATIONS},
                         {VKGMM_ID_OUT_TYPE, uint32_t(operands_[2].type)},
                         {VKGMM_ID_HAS_EXISTING, has_existing_},
                         {VKGMM_ID_COMBINE_LISTED, device_split()}});
}

void PlanCore::bind_routing(const OperandViews& ops, Dispatch& build, const RoutingSource* given) const {
  const char* op = name();
  const Routing& r = *routing_;
  if (given) {
    // Another plan's order of the same slots: its counts and row map, bound from its workspace's start.
    const bool same = given->tokens == r.tokens && given->top_k == r.top_k && given->group_offset == r.group_offset &&
                      given->num_local == r.num_local && given->num_experts == r.num_experts;
    if (!same || given->map + r.slots() > given->words.size / 4 ||
        given->sizes + r.num_local > given->words.size / 4)
      throw Error(Status::internal, std::string(op) + ": a given routing is not of this problem's slots");
    const BoundOperand src = bind_operand(*ctx_, op, "workspace", given->words, DType::f32, given->words.size / 4, 0, false);
    build.infos[VKGMM_BINDING_META_GIVEN] = src.info;
    abi::MetadataPush& m = build.push.as<abi::MetadataPush>();
    m.given_counts_off = src.element_offset + static_cast<uint32_t>(given->sizes);
    m.given_map_off = src.element_offset + static_cast<uint32_t>(given->map);
    const ShaderCode code = metadata_shader();
    build.pipeline = ctx_->pipeline(code.code, code.words, meta_constants(true));
    // It reads what the other plan's build wrote (the callers put a barrier after that build too).
    build.before_own |= VK_ACCESS_SHADER_READ_BIT;
  }
  const uint32_t slots = static_cast<uint32_t>(r.slots());
  // ids (int32) and weights (f32): words at any 4-byte offset, read by the metadata build's routing
  // prologue at the sizes' and an unused binding. A problem of no tokens reads neither.
  abi::MetadataPush& m = build.push.as<abi::MetadataPush>();
  if (slots) {
    const BoundOperand ids = bind_words(*ctx_, op, "ids", ops.ids, slots, "int32");
    build.infos[VKGMM_BINDING_META_IDS] = ids.info;
    m.ids_off = ids.element_offset;
    if (r.combine) {
      const BoundOperand w = bind_words(*ctx_, op, "weights", ops.weights, slots, "f32");
      build.infos[VKGMM_BINDING_META_WEIGHTS] = w.info;
      m.weights_off = w.element_offset;
    }
  }
  m.slots = slots;
  m.window_offset = r.group_offset;
  m.route_experts = r.num_local;
  m.num_experts = r.num_experts;
  m.counts_off = static_cast<uint32_t>(workspace_.counts);
  m.map_off = static_cast<uint32_t>(workspace_.map);
  m.weight_rows_off = static_cast<uint32_t>(workspace_.weight_rows);
  m.tile_count_off = static_cast<uint32_t>(workspace_.tile_counts);
  m.tile_counts = r.fused_tiles;
}

void PlanCore::bind_kernel_reads(const OperandViews& ops, Dispatch& op) const {
  const char* op_name = name();
  // ids or group sizes (int32) and weights (f32) at any 4-byte offset; the status word where the app gives one.
  const BoundOperand ids = routes_in_kernel()
                               ? bind_words(*ctx_, op_name, "ids", ops.ids, routing_->slots(), "int32")
                               : bind_words(*ctx_, op_name, "group_sizes", ops.group_sizes, kernel_sizes_, "int32");
  // The ids or sizes, the weights and the status word where given (the caller's views elsewhere).
  auto at = [&op](RouteBinding b) -> VkDescriptorBufferInfo& { return op.route[b - kRouteWeights]; };
  at(kRouteReads) = ids.info;
  abi::GmmPush& p = op.push.as<abi::GmmPush>();
  p.ids_off = ids.element_offset;
  if (routes_in_kernel()) {
    const BoundOperand w = bind_words(*ctx_, op_name, "weights", ops.weights, routing_->slots(), "f32");
    at(kRouteWeights) = w.info;
    p.route_weights_off = w.element_offset;
  }
  p.status_off = VKGMM_NO_STATUS;
  if (ops.status.buffer) {
    const BoundOperand s = bind_words(*ctx_, op_name, "status", ops.status, 1, "uint32");
    at(kRouteStatus) = s.info;
    p.status_off = s.element_offset;
  }
}

std::vector<PlanCore::CombineRows> PlanCore::combine_rows() const {
  std::vector<CombineRows> rows;
  if (combines()) rows.push_back({0, routing_->tokens, routing_->top_k, routing_->out_n, workspace_.partial});
  // The device split's list holds at most one entry per 2 slots (each split group has 2 chunks or more).
  if (device_split())
    rows.push_back({0, device_meta_->split.slots / 2, device_meta_->split.slots, device_meta_->split.group_elements,
                    workspace_.partial, true});
  if (split_)
    for (const SplitReduction::Run& r : split_->runs)
      rows.push_back({r.first_group, r.groups, split_->chunks, split_->group_elements,
                      workspace_.partial + uint64_t(r.first_slot) * split_->group_elements});
  return rows;
}

Dispatch PlanCore::bind_combine(const OperandViews& ops, const VkDescriptorBufferInfo& work, const CombineRows& rows) const {
  const char* op = name();
  // The combine reads the results in the workspace and writes out (its module packs 16-bit elements in
  // words), adding existing_out.
  Dispatch sum;
  sum.bind_all(work);  // COMBINE_PARTIAL and the unused ones
  // out and existing_out bound whole (the plain layout), in words.
  const BoundOperand o = bind_operand(*ctx_, op, "out", ops.out, operands_[2].type, operands_[2].count, 0, true);
  const BoundOperand e = has_existing_ ? bind_operand(*ctx_, op, "existing_out", ops.existing_out,
                                                      operands_[2].type, operands_[2].count, 0, true)
                                       : o;
  sum.infos[VKGMM_BINDING_COMBINE_OUT] = o.info;
  sum.infos[VKGMM_BINDING_COMBINE_EXISTING] = e.info;
  abi::CombinePush& c = sum.push.start<abi::CombinePush>();
  const uint64_t first = uint64_t(rows.first_row) * rows.out_n;  // below out's count, a 32-bit element offset
  c.out_off = static_cast<uint32_t>(o.element_offset + first);
  c.ex_off = static_cast<uint32_t>(e.element_offset + first);
  c.lhs_off = static_cast<uint32_t>(rows.partial);
  c.tokens = rows.rows;
  c.top_k = rows.top_k;
  c.out_n = rows.out_n;
  if (rows.listed) {
    c.list_off = static_cast<uint32_t>(workspace_.split_list);
    c.out_rows = device_meta_->num_local;
  }
  const SpreadYZ spread = spread_yz(rows.rows, info());
  sum.grid[0] = combine_columns(rows.out_n);
  sum.grid[1] = static_cast<uint32_t>(spread.y);
  sum.grid[2] = static_cast<uint32_t>(spread.z);
  // Every slot's result written, then summed per row in slot order; out written after the kernel's
  // writes to it (a split reduction's kernel stores the groups it does not split).
  sum.wait_for = VK_ACCESS_SHADER_WRITE_BIT;
  sum.before_own = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  sum.pipeline = combine_pipeline_;
  return sum;
}

RoutingSource PlanCore::routing_source(const BufferView& workspace) const {
  if (!routing_ || routing_->in_kernel)
    throw Error(Status::internal, std::string(name()) + ": routing_source of a plan with no routing build");
  const Routing& r = *routing_;
  const BufferView work = workspace_view(workspace);
  RoutingSource s;
  s.words = {work.buffer, work.offset, (workspace_.map + r.slots()) * 4};
  s.sizes = workspace_.sizes;
  s.map = workspace_.map;
  s.tokens = r.tokens, s.top_k = r.top_k, s.group_offset = r.group_offset, s.num_local = r.num_local;
  s.num_experts = r.num_experts;
  return s;
}

}  // namespace vkgmm
