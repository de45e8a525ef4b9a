// TgmmPlan: validate a tgmm problem, upload its group offsets, record its dispatch.
#include <algorithm>
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

// Mirrors the push constants of shaders/tgmm.comp.
struct TgmmPush {
  uint32_t m, k, n, num_groups, group_offset;
  uint32_t lhs_off, rhs_off, out_off, ex_off;
};

}  // namespace

struct TgmmPlan::State {
  std::shared_ptr<Context::Impl> ctx;
  TgmmProblem problem;
  int64_t groups = 0;  // num_actual_groups
  Tiling tiling;
  KernelShape shape;
  OperandSizes sizes;
  Buffer meta;
  bool vec4 = false;
  Kernel kernel;
  VkDeviceSize part_bytes = 0;  // > 0: operands are bound in parts of this size (the split layout)
  uint32_t grid[3] = {0, 0, 0};

  // Checks the operand views; fills the descriptors (returns their count) and the push constants.
  // (texels: as GmmPlan's; null when lhs and rhs are read as storage buffers)
  uint32_t bind(const TgmmOperands& ops, VkDescriptorBufferInfo (&infos)[kNumSplitBindings], TgmmPush& push,
                VkBufferView (&texels)[2]) const;
};

TgmmPlan::TgmmPlan(Context& ctx, const TgmmProblem& p) {
  auto st = std::make_shared<State>();
  st->ctx = ctx.shared_impl();
  st->problem = p;
  const DeviceInfo& info = ctx.info();
  const char* op = "tgmm";

  check_dims(op, p.m, p.k, p.n);
  const int64_t G = check_group_sizes(op, p.group_sizes, p.m);
  check_types(op, p.lhs_type, p.rhs_type, p.out_type);
  st->groups = check_group_window(op, G, p.group_offset, p.num_actual_groups, "num_actual_groups");

  const Schedule schedule = resolve_schedule(p.schedule, info);
  st->tiling = resolve_tiling(p.tiling, p.m, p.k, p.n, schedule, op, {}, {false, p.lhs_mk});
  st->sizes.lhs = operand_bytes(p.lhs_type, uint64_t(p.k) * p.m);
  st->sizes.rhs = operand_bytes(p.rhs_type, uint64_t(p.m) * p.n);
  st->sizes.out = operand_bytes(p.out_type, uint64_t(st->groups) * p.k * p.n);
  st->sizes.existing_out = p.existing_out ? st->sizes.out : 0;
  st->kernel.split =
      check_operand_limits(op, info, {{"lhs", st->sizes.lhs}, {"rhs", st->sizes.rhs}, {"out", st->sizes.out}});
  if (st->kernel.split) st->part_bytes = split_part_bytes(info);

  // The output block is [tk, tn]; the group's rows are the reduction, tm at a time.
  // The direct schedule reads rhs as vec4 along N where N allows (see VEC4 in shaders/tgmm.comp);
  // operands bound in parts are read a word at a time.
  st->vec4 = schedule == Schedule::direct && p.n % 4 == 0 && !st->kernel.split && !vec4_disabled();
  // With lhs stored [m, k], the block's k rows are read 4 at a time too.
  // lhs stored [k, m] is read 4 rows of the group at a time instead (m a multiple of 4).
  const bool vec4_lhs = st->vec4 && (p.lhs_mk ? p.k % 4 == 0 : p.m % 4 == 0);
  st->shape = make_kernel_shape(st->tiling.tk, st->tiling.tm, st->tiling.tn, p.k, p.m, p.n, schedule, info, op,
                                st->vec4 ? 4 : 1, vec4_lhs && p.lhs_mk ? 4 : 1);
  st->tiling = {st->shape.step, st->shape.rows, st->shape.cols};

  // Every workgroup walks its group's rows directly, so of the metadata it needs only the group offsets:
  // the visit list's role (every active group, empty or not, gets its block written) is the grid's z.
  const std::vector<int32_t> offsets = make_group_offsets(p.group_sizes);
  st->meta = ctx.create_buffer(offsets.size() * sizeof(int32_t));
  st->meta.upload(offsets.data(), offsets.size() * sizeof(int32_t));

  const uint64_t x = (p.n + st->shape.cols - 1) / st->shape.cols;
  const uint64_t y = (p.k + st->shape.rows - 1) / st->shape.rows;
  check_grid(op, info, x, y, st->groups);
  st->grid[0] = static_cast<uint32_t>(x);
  st->grid[1] = static_cast<uint32_t>(y);
  st->grid[2] = static_cast<uint32_t>(st->groups);

  const KernelShape& s = st->shape;
  Kernel& kn = st->kernel;
  kn.constants = {s.invocations(), s.step, s.rows, s.cols, s.tx, s.ty, s.rm, s.rn,
                  uint32_t(p.lhs_type), uint32_t(p.rhs_type), uint32_t(p.out_type),
                  p.lhs_mk, s.use_shared, p.existing_out, s.shared_a, s.shared_b, p.out_nk, st->vec4, vec4_lhs};
  kn.vec4_id = 17;
  kn.vec4_lhs_id = 18;
  kn.vec4_lhs_any_offset = !p.lhs_mk;  // the shader peels rows up to an aligned one
  kn.choose_modules(Op::tgmm, info, p.lhs_type, p.rhs_type, p.out_type);
  kn.create(*st->ctx, st->part_bytes);
  st->ctx->throw_if_validation_messages();
  state_ = std::move(st);
}

const TgmmProblem& TgmmPlan::problem() const { return state_->problem; }
Tiling TgmmPlan::tiling() const { return state_->tiling; }
OperandSizes TgmmPlan::sizes() const { return state_->sizes; }
VkDeviceSize TgmmPlan::metadata_bytes() const { return state_->meta.size(); }

// Checks the operand views and resolves them to descriptors and push constants.
uint32_t TgmmPlan::State::bind(const TgmmOperands& ops, VkDescriptorBufferInfo (&infos)[kNumSplitBindings],
                               TgmmPush& push, VkBufferView (&texels)[2]) const {
  texels[0] = texels[1] = VK_NULL_HANDLE;
  const State& st = *this;
  const TgmmProblem& p = st.problem;
  const char* op = "tgmm";
  check_existing_view(op, p.existing_out, ops.existing_out, ops.out);
  check_no_overlap(op, ops.out, {{"lhs", ops.lhs}, {"rhs", ops.rhs}});
  check_views_in_buffers(*st.ctx, op,
                         {{"lhs", ops.lhs}, {"rhs", ops.rhs}, {"out", ops.out}, {"existing_out", ops.existing_out}});

  const VkDeviceSize pb = st.part_bytes;
  const VkDescriptorBufferInfo meta{st.meta.handle(), 0, st.meta.size()};
  // m = 0 still writes every group's block (zeros or existing_out); empty inputs bind the metadata,
  // which the shader never reads through them.
  BoundOperand lhs, rhs;
  lhs.info = rhs.info = meta;
  if (p.m) {
    lhs = bind_operand(*st.ctx, op, "lhs", ops.lhs, p.lhs_type, uint64_t(p.k) * p.m, pb);
    rhs = bind_operand(*st.ctx, op, "rhs", ops.rhs, p.rhs_type, uint64_t(p.m) * p.n, pb);
  }
  const uint64_t out_count = uint64_t(st.groups) * p.k * p.n;
  const BoundOperand out = bind_operand(*st.ctx, op, "out", ops.out, p.out_type, out_count, pb);
  const BoundOperand ex =
      p.existing_out ? bind_operand(*st.ctx, op, "existing_out", ops.existing_out, p.out_type, out_count, pb) : out;
  const uint32_t count = layout_descriptors({lhs, rhs, out, ex}, meta, st.kernel.split, infos);
  push = {uint32_t(p.m), uint32_t(p.k), uint32_t(p.n), uint32_t(st.groups), uint32_t(p.group_offset),
                lhs.element_offset, rhs.element_offset, out.element_offset, ex.element_offset};
  if (st.kernel.texel_code.code && p.m)
    bind_texel_inputs(*st.ctx, ops.lhs, p.lhs_type, uint64_t(p.k) * p.m, ops.rhs, p.rhs_type,
                      uint64_t(p.m) * p.n, texels, push.lhs_off, push.rhs_off);
  return count;
}

void TgmmPlan::check(const TgmmOperands& ops) const {
  VkDescriptorBufferInfo infos[kNumSplitBindings];
  TgmmPush push;
  VkBufferView texels[2];
  // Also creates the pipeline these offsets need, so record() cannot fail after a check that passed.
  if (state_->bind(ops, infos, push, texels))
    state_->kernel.for_offsets(*state_->ctx, push.lhs_off, push.rhs_off, texels[0] != VK_NULL_HANDLE);
}

bool TgmmPlan::texel_loads(const TgmmOperands& ops) const {
  VkDescriptorBufferInfo infos[kNumSplitBindings];
  TgmmPush push;
  VkBufferView texels[2];
  return state_->bind(ops, infos, push, texels) && texels[0] != VK_NULL_HANDLE;
}

void TgmmPlan::record(VkCommandBuffer cb, const TgmmOperands& ops) const {
  if (cb == VK_NULL_HANDLE) throw Error(Status::invalid_argument, "tgmm: command buffer is VK_NULL_HANDLE");
  const State& st = *state_;
  VkDescriptorBufferInfo infos[kNumSplitBindings];
  TgmmPush push;
  VkBufferView texels[2];
  const uint32_t count = st.bind(ops, infos, push, texels);
  const bool texel = texels[0] != VK_NULL_HANDLE;
  VkPipeline pipeline = st.kernel.for_offsets(*st.ctx, push.lhs_off, push.rhs_off, texel);
  bind_and_push(*st.ctx, cb, pipeline, infos, count, &push, sizeof(push), texel ? texels : nullptr);
  vkCmdDispatch(cb, st.grid[0], st.grid[1], st.grid[2]);
}

void tgmm(Context& ctx, const TgmmProblem& problem, const TgmmOperands& ops) {
  TgmmPlan plan(ctx, problem);
  ctx.submit_and_wait([&](VkCommandBuffer cb) { plan.record(cb, ops); });
}

}  // namespace vkgmm
