// GmmPlan: validate a gmm problem, build and upload its visit list, record its dispatch.
#include <numeric>
#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <string>

#include "context_impl.hpp"
#include "kernel.hpp"
#include "operands.hpp"
#include "problem_checks.hpp"
#include "shader_modules.hpp"
#include "texel_views.hpp"
#include "tiling.hpp"
#include "view_bounds.hpp"
#include "vkgmm/metadata.hpp"
#include "vkgmm/ops.hpp"

namespace vkgmm {

namespace {

// Mirrors the push constants of shaders/gmm.comp.
struct GmmPush {
  uint32_t m, k, n, num_visits, group_offset, active_begin, active_end;
  uint32_t lhs_off, rhs_off, out_off, ex_off, visits_off, fill_rows;
};

}  // namespace

struct GmmPlan::State {
  std::shared_ptr<Context::Impl> ctx;
  GmmProblem problem;
  int64_t g_local = 0;
  Tiling tiling;
  KernelShape shape;
  OperandSizes sizes;
  int64_t num_tiles = 0;
  uint32_t num_visits = 0;  // num_tiles + fill visits
  uint32_t visits_off = 0;
  uint32_t fill_rows = 0;   // rows per fill visit
  uint32_t active_begin = 0, active_end = 0;
  Buffer meta;
  bool vec4 = false;
  Kernel kernel;
  VkDeviceSize part_bytes = 0;  // > 0: operands are bound in parts of this size (the split layout)
  uint32_t grid[3] = {0, 0, 0};

  // Checks the operand views; fills the descriptors (returns their count, 0 when there is nothing to
  // dispatch), the push constants and, where lhs and rhs can be read through texel views, those views
  // (else texels[0] is null).
  uint32_t bind(const GmmOperands& ops, VkDescriptorBufferInfo (&infos)[kNumSplitBindings], GmmPush& push,
                VkBufferView (&texels)[2]) const;
};

GmmPlan::GmmPlan(Context& ctx, const GmmProblem& p) {
  auto st = std::make_shared<State>();
  st->ctx = ctx.shared_impl();
  st->problem = p;
  const DeviceInfo& info = ctx.info();
  const char* op = "gmm";

  check_dims(op, p.m, p.k, p.n);
  const int64_t G = check_group_sizes(op, p.group_sizes, p.m);
  check_types(op, p.lhs_type, p.rhs_type, p.out_type);
  st->g_local = check_group_window(op, G, p.group_offset, p.num_rhs_groups, "rhs groups (rhs.shape[0])");

  const Schedule schedule = resolve_schedule(p.schedule, info);
  st->tiling = resolve_tiling(p.tiling, p.m, p.k, p.n, schedule, op, {&p.group_sizes, p.group_offset, st->g_local},
                              {!p.transpose_rhs, false});
  st->sizes.lhs = operand_bytes(p.lhs_type, uint64_t(p.m) * p.k);
  st->sizes.rhs = operand_bytes(p.rhs_type, uint64_t(st->g_local) * p.k * p.n);
  st->sizes.out = operand_bytes(p.out_type, uint64_t(p.m) * p.n);
  st->sizes.existing_out = p.existing_out ? st->sizes.out : 0;
  st->kernel.split =
      check_operand_limits(op, info, {{"lhs", st->sizes.lhs}, {"rhs", st->sizes.rhs}, {"out", st->sizes.out}});
  if (st->kernel.split) st->part_bytes = split_part_bytes(info);

  // The direct schedule loads 4 elements at a time where K (and N, unless rhs is transposed) allow it;
  // record() falls back to scalar loads when an operand's offset is not a multiple of 4 elements.
  // Operands bound in parts are read a word at a time.
  st->vec4 = schedule == Schedule::direct && p.k % 4 == 0 && (p.transpose_rhs || p.n % 4 == 0) &&
             !st->kernel.split && !vec4_disabled();
  st->shape = make_kernel_shape(st->tiling.tm, st->tiling.tk, st->tiling.tn, p.m, p.k, p.n, schedule, info, op,
                                st->vec4 ? 4 : 1);
  st->tiling = {st->shape.rows, st->shape.step, st->shape.cols};

  if (p.m > 0) {
    const int64_t tm = st->shape.rows;
    GroupMetadata md = make_group_metadata(p.group_sizes, p.m, tm, p.group_offset, st->g_local, false);
    st->num_tiles = md.num_tiles;
    st->active_begin = static_cast<uint32_t>(md.group_offsets[p.group_offset]);
    st->active_end = static_cast<uint32_t>(md.group_offsets[p.group_offset + st->g_local]);
    // Visits: tiles starting at each active group's first row, then the fill visits (group -1) of the rows
    // outside [active_begin, active_end) (see make_gmm_visits).
    // Fill visits only copy or zero rows: give each at least 256 of them, so inactive rows (which the
    // m tile was not sized for) cannot multiply the visits.
    st->fill_rows = static_cast<uint32_t>(tm * ((256 + tm - 1) / tm));
    const GmmVisits visits = make_gmm_visits(md.group_offsets, p.m, tm, p.group_offset, st->g_local, st->fill_rows);
    st->num_visits = static_cast<uint32_t>(visits.groups.size());
    st->visits_off = static_cast<uint32_t>(md.group_offsets.size());
    std::vector<int32_t> meta = md.group_offsets;
    meta.insert(meta.end(), visits.groups.begin(), visits.groups.end());
    meta.insert(meta.end(), visits.row_starts.begin(), visits.row_starts.end());
    if (meta.size() * sizeof(int32_t) > info.max_storage_buffer_range)
      throw Error(Status::unsupported, std::string(op) + ": the visit list (" + std::to_string(meta.size() * 4) +
                                           " bytes) exceeds maxStorageBufferRange: use a larger tm");
    st->meta = ctx.create_buffer(meta.size() * sizeof(int32_t));
    st->meta.upload(meta.data(), meta.size() * sizeof(int32_t));

    const uint64_t n_tiles = (p.n + st->shape.cols - 1) / st->shape.cols;
    const uint64_t y = std::min<uint64_t>(st->num_visits, info.max_workgroup_count[1]);
    const uint64_t z = (st->num_visits + y - 1) / y;
    check_grid(op, info, n_tiles, y, z);
    st->grid[0] = static_cast<uint32_t>(n_tiles);
    st->grid[1] = static_cast<uint32_t>(y);
    st->grid[2] = static_cast<uint32_t>(z);

    const KernelShape& s = st->shape;
    Kernel& kn = st->kernel;
    kn.constants = {s.invocations(), s.rows, s.step, s.cols, s.tx, s.ty, s.rm, s.rn,
                    uint32_t(p.lhs_type), uint32_t(p.rhs_type), uint32_t(p.out_type),
                    p.transpose_rhs, s.use_shared, p.existing_out, s.shared_a, s.shared_b, st->vec4};
    kn.vec4_id = 16;
    kn.vec4_needs_lhs = true;
    kn.choose_modules(Op::gmm, info, p.lhs_type, p.rhs_type, p.out_type);
    kn.create(*st->ctx, st->part_bytes);
  }
  st->ctx->throw_if_validation_messages();
  state_ = std::move(st);
}

const GmmProblem& GmmPlan::problem() const { return state_->problem; }
Tiling GmmPlan::tiling() const { return state_->tiling; }
OperandSizes GmmPlan::sizes() const { return state_->sizes; }
VkDeviceSize GmmPlan::metadata_bytes() const { return state_->meta.size(); }
int64_t GmmPlan::num_tiles() const { return state_->num_tiles; }

// Checks the operand views and resolves them to descriptors and push constants.
uint32_t GmmPlan::State::bind(const GmmOperands& ops, VkDescriptorBufferInfo (&infos)[kNumSplitBindings],
                              GmmPush& push, VkBufferView (&texels)[2]) const {
  texels[0] = texels[1] = VK_NULL_HANDLE;
  const State& st = *this;
  const GmmProblem& p = st.problem;
  const char* op = "gmm";
  check_existing_view(op, p.existing_out, ops.existing_out, ops.out);
  check_no_overlap(op, ops.out, {{"lhs", ops.lhs}, {"rhs", ops.rhs}});
  check_views_in_buffers(*st.ctx, op,
                         {{"lhs", ops.lhs}, {"rhs", ops.rhs}, {"out", ops.out}, {"existing_out", ops.existing_out}});
  if (p.m == 0) return 0;  // nothing to compute or fill

  const VkDeviceSize pb = st.part_bytes;
  const BoundOperand lhs = bind_operand(*st.ctx, op, "lhs", ops.lhs, p.lhs_type, uint64_t(p.m) * p.k, pb);
  const BoundOperand rhs =
      bind_operand(*st.ctx, op, "rhs", ops.rhs, p.rhs_type, uint64_t(st.g_local) * p.k * p.n, pb);
  const BoundOperand out = bind_operand(*st.ctx, op, "out", ops.out, p.out_type, uint64_t(p.m) * p.n, pb);
  const BoundOperand ex =
      p.existing_out
          ? bind_operand(*st.ctx, op, "existing_out", ops.existing_out, p.out_type, uint64_t(p.m) * p.n, pb)
          : out;
  const VkDescriptorBufferInfo meta{st.meta.handle(), 0, st.meta.size()};
  const uint32_t count = layout_descriptors({lhs, rhs, out, ex}, meta, st.kernel.split, infos);
  push = {uint32_t(p.m), uint32_t(p.k), uint32_t(p.n), st.num_visits, uint32_t(p.group_offset),
               st.active_begin, st.active_end, lhs.element_offset, rhs.element_offset, out.element_offset,
               ex.element_offset, st.visits_off, st.fill_rows};
  if (st.kernel.texel_code.code)
    bind_texel_inputs(*st.ctx, ops.lhs, p.lhs_type, uint64_t(p.m) * p.k, ops.rhs, p.rhs_type,
                      uint64_t(st.g_local) * p.k * p.n, texels, push.lhs_off, push.rhs_off);
  return count;
}

void GmmPlan::check(const GmmOperands& ops) const {
  VkDescriptorBufferInfo infos[kNumSplitBindings];
  GmmPush push;
  VkBufferView texels[2];
  // Also creates the pipeline these offsets need, so record() cannot fail after a check that passed.
  if (state_->bind(ops, infos, push, texels))
    state_->kernel.for_offsets(*state_->ctx, push.lhs_off, push.rhs_off, texels[0] != VK_NULL_HANDLE);
}

bool GmmPlan::texel_loads(const GmmOperands& ops) const {
  VkDescriptorBufferInfo infos[kNumSplitBindings];
  GmmPush push;
  VkBufferView texels[2];
  return state_->bind(ops, infos, push, texels) && texels[0] != VK_NULL_HANDLE;
}

void GmmPlan::record(VkCommandBuffer cb, const GmmOperands& ops) const {
  if (cb == VK_NULL_HANDLE) throw Error(Status::invalid_argument, "gmm: command buffer is VK_NULL_HANDLE");
  const State& st = *state_;
  VkDescriptorBufferInfo infos[kNumSplitBindings];
  GmmPush push;
  VkBufferView texels[2];
  const uint32_t count = st.bind(ops, infos, push, texels);
  if (count == 0) return;
  const bool texel = texels[0] != VK_NULL_HANDLE;
  VkPipeline pipeline = st.kernel.for_offsets(*st.ctx, push.lhs_off, push.rhs_off, texel);
  bind_and_push(*st.ctx, cb, pipeline, infos, count, &push, sizeof(push), texel ? texels : nullptr);
  vkCmdDispatch(cb, st.grid[0], st.grid[1], st.grid[2]);
}

void gmm(Context& ctx, const GmmProblem& problem, const GmmOperands& ops) {
  GmmPlan plan(ctx, problem);
  ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
}

}  // namespace vkgmm
