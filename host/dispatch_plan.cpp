// The plan core (see dispatch_plan.hpp): sizes and limits, pipelines, workspace, binding and recording.
#include "dispatch_plan.hpp"

#include <string>

#include "operands.hpp"
#include "problem_checks.hpp"
#include "texel_views.hpp"
#include "view_bounds.hpp"

namespace vkgmm {

DispatchPlan::DispatchPlan(Context& ctx, Op op) : ctx_(ContextInternals::shared(ctx)), op_(op) {}

int64_t DispatchPlan::check_problem(int64_t m, int64_t k, int64_t n, const std::vector<int32_t>& group_sizes,
                                    DType lhs, DType rhs, DType out) const {
  check_dims(name(), m, k, n);
  const int64_t G = check_group_sizes(name(), group_sizes, m);
  check_types(name(), lhs, rhs, out);
  return G;
}

const DeviceInfo& DispatchPlan::info() const { return ctx_->dev.info; }
const ResolvedOptions& DispatchPlan::options() const { return ctx_->dev.options; }

void DispatchPlan::set_operands(OperandSpec lhs, OperandSpec rhs, OperandSpec out, bool existing_out) {
  operands_[0] = lhs;
  operands_[1] = rhs;
  operands_[2] = out;
  has_existing_ = existing_out;
  sizes_.lhs = operand_bytes(lhs.type, lhs.count);
  sizes_.rhs = operand_bytes(rhs.type, rhs.count);
  sizes_.out = operand_bytes(out.type, out.count);
  sizes_.existing_out = existing_out ? sizes_.out : 0;
  kernel_.split =
      check_operand_limits(name(), info(), {{"lhs", sizes_.lhs}, {"rhs", sizes_.rhs}, {"out", sizes_.out}});
  if (kernel_.split) part_bytes_ = split_part_bytes(info());
}

// Operands bound in parts are read a word at a time.
bool DispatchPlan::vec4_allowed(Schedule schedule) const {
  return schedule == Schedule::direct && !kernel_.split && options().vec4_loads;
}

void DispatchPlan::set_shape(const KernelShape& shape) {
  kernel_.set_shape(shape);
  kernel_.set(VKGMM_ID_LHS_TYPE, uint32_t(operands_[0].type));
  kernel_.set(VKGMM_ID_RHS_TYPE, uint32_t(operands_[1].type));
  kernel_.set(VKGMM_ID_OUT_TYPE, uint32_t(operands_[2].type));
  kernel_.set(VKGMM_ID_HAS_EXISTING, has_existing_);
}

void DispatchPlan::set_metadata(const std::vector<int32_t>& words) {
  const VkDeviceSize bytes = words.size() * sizeof(int32_t);
  if (bytes > info().max_storage_buffer_range)
    throw Error(Status::unsupported, std::string(name()) + ": the metadata (" + std::to_string(bytes) +
                                         " bytes) exceeds maxStorageBufferRange: use a larger tm");
  meta_ = ContextInternals::adopt(ctx_).create_buffer(bytes);
  meta_.upload(words.data(), bytes);
}

void DispatchPlan::set_grid(uint64_t x, uint64_t y, uint64_t z) {
  check_grid(name(), info(), x, y, z);
  grid_[0] = static_cast<uint32_t>(x);
  grid_[1] = static_cast<uint32_t>(y);
  grid_[2] = static_cast<uint32_t>(z);
}

void DispatchPlan::build() {
  if (dispatches()) {
    if (push_.empty()) throw Error(Status::internal, std::string(name()) + ": the op set no push constants");
    kernel_.choose_modules(op_, info(), options(), operands_[0].type, operands_[1].type, operands_[2].type);
    kernel_.create(*ctx_, part_bytes_);
  }
  ctx_->log.throw_if_any();
}

// The views checked and resolved: descriptors in binding order, push constants with the operands'
// offsets, and the inputs' texel views (texel false: read as storage buffers).
struct DispatchPlan::Bound {
  VkDescriptorBufferInfo infos[kNumSplitBindings];
  uint32_t count = 0;  // 0: nothing to dispatch
  VkBufferView texels[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};
  bool texel = false;
  uint32_t push[abi::kPushConstantBytes / 4] = {};
  abi::OperandOffsets& offsets() { return *reinterpret_cast<abi::OperandOffsets*>(push); }
};

DispatchPlan::Bound DispatchPlan::bind(const OperandViews& ops) const {
  const char* op = name();
  check_existing_view(op, has_existing_, ops.existing_out, ops.out);
  check_no_overlap(op, ops.out, {{"lhs", ops.lhs}, {"rhs", ops.rhs}});
  check_views_in_buffers(*ctx_, op,
                         {{"lhs", ops.lhs}, {"rhs", ops.rhs}, {"out", ops.out}, {"existing_out", ops.existing_out}});
  Bound b;
  if (!dispatches()) return b;

  const VkDescriptorBufferInfo meta{meta_.handle(), 0, meta_.size()};
  static const char* const kNames[4] = {"lhs", "rhs", "out", "existing_out"};
  const BufferView* views[4] = {&ops.lhs, &ops.rhs, &ops.out, &ops.existing_out};
  BoundOperand bound[4];
  for (int o = 0; o < 4; ++o) {
    const OperandSpec& spec = operands_[o < 3 ? o : 2];  // existing_out: out's type and count
    if (o == 3 && !has_existing_)
      bound[3] = bound[2];  // the shader reads none: any valid descriptor
    else if (spec.count)
      bound[o] = bind_operand(*ctx_, op, kNames[o], *views[o], spec.type, spec.count, part_bytes_, !kernel_.storage16);
    else
      bound[o].info = meta;  // an input never read
  }
  b.count = layout_descriptors(bound, meta, kernel_.split, b.infos);
  std::memcpy(b.push, push_.data(), push_.size() * 4);
  abi::OperandOffsets& off = b.offsets();
  off.lhs_off = bound[0].element_offset;
  off.rhs_off = bound[1].element_offset;
  off.out_off = bound[2].element_offset;
  off.ex_off = bound[3].element_offset;
  if (kernel_.texel_code.code && operands_[0].count && operands_[1].count) {
    bind_texel_inputs(*ctx_, ops.lhs, operands_[0].type, operands_[0].count, ops.rhs, operands_[1].type,
                      operands_[1].count, b.texels, off.lhs_off, off.rhs_off);
    b.texel = b.texels[0] != VK_NULL_HANDLE;
  }
  return b;
}

void DispatchPlan::check(const OperandViews& ops) const {
  // Also creates the pipeline these offsets need, so record() cannot fail after a check that passed.
  Bound b = bind(ops);
  if (b.count) kernel_.for_offsets(*ctx_, b.offsets().lhs_off, b.offsets().rhs_off, b.texel);
}

bool DispatchPlan::texel_loads(const OperandViews& ops) const { return bind(ops).texel; }

void DispatchPlan::record(VkCommandBuffer cb, const OperandViews& ops) const {
  if (cb == VK_NULL_HANDLE)
    throw Error(Status::invalid_argument, std::string(name()) + ": command buffer is VK_NULL_HANDLE");
  Bound b = bind(ops);
  if (!b.count) return;
  VkPipeline pipeline = kernel_.for_offsets(*ctx_, b.offsets().lhs_off, b.offsets().rhs_off, b.texel);
  bind_and_push(*ctx_, cb, pipeline, b.infos, b.count, b.push, static_cast<uint32_t>(push_.size() * 4),
                b.texel ? b.texels : nullptr);
  vkCmdDispatch(cb, grid_[0], grid_[1], grid_[2]);
}

}  // namespace vkgmm
