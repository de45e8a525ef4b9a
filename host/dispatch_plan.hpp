// The plan core: what every grouped op's plan has in common, written once (internal).
//
// After CUTLASS's base_grouped (can_implement / initialize / run for every grouped kernel): an op's plan
// is this core plus a small per-op part (host/gmm_plan.cpp, host/tgmm_plan.cpp) that validates its
// problem, picks its tiling, and fills in the core: operand types and element counts, the kernel shape
// and its own specialization constants, the metadata the kernel reads, the grid and the push constants.
// The core does the rest for every op: operand sizes and binding limits, the modules and pipelines,
// the metadata workspace, and at record time checking the views, binding them (storage buffers, parts
// or texel views), pushing and dispatching. A new op is a new per-op part, never a copy of this.
#pragma once

#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "interface.hpp"
#include "kernel.hpp"
#include "op.hpp"
#include "vkgmm/ops.hpp"

namespace vkgmm {

// The operand views of every op: lhs, rhs, out, existing_out in binding order, then, with device group
// sizes, the sizes, the workspace and the status word (GmmOperands and TgmmOperands are these).
struct OperandViews {
  BufferView lhs, rhs, out, existing_out;
  BufferView group_sizes, workspace, status;
};

// An operand as the kernel reads it: its element type and count. An input of count 0 (tgmm with m = 0)
// is never read: it is neither checked nor bound (the metadata stands in).
struct OperandSpec {
  DType type = DType::f32;
  uint64_t count = 0;
};

class DispatchPlan {
 public:
  // `constants`: the op's specialization constants beside abi::kCommonConstants (abi::kGmmConstants, ...).
  template <size_t N>
  DispatchPlan(Context& ctx, Op op, const abi::SpecConstant (&constants)[N]) : DispatchPlan(ctx, op) {
    kernel_.declare(constants);
  }

  // ----- made by the op's part, once, in this order -----
  const DeviceInfo& info() const;
  const ResolvedOptions& options() const;
  const char* name() const { return op_name(op_); }
  // lhs, rhs and out; existing_out (when the problem has one) is read with out's type and count.
  // Sets sizes() and whether operands are bound in parts.
  void set_operands(OperandSpec lhs, OperandSpec rhs, OperandSpec out, bool existing_out);
  // Whether the direct schedule may use 4-element loads at all (the op adds its shape's conditions).
  bool vec4_allowed(Schedule schedule) const;
  // The kernel's shape and the constants every op shares (types, existing_out); then the op's own
  // constants with kernel().set().
  void set_shape(const KernelShape& shape);
  Kernel& kernel() { return kernel_; }
  // The rules every op's problem shares: dims, group sizes on the host or their count on the device
  // (returns G), element types.
  int64_t check_problem(int64_t m, int64_t k, int64_t n, const std::vector<int32_t>& group_sizes,
                        const DeviceGroupSizes& device, DType lhs, DType rhs, DType out) const;
  // The metadata the kernel reads at VKGMM_BINDING_META, built on the host now.
  void set_metadata(const std::vector<int32_t>& words);
  // ... or built on the device by record() (group sizes in a device buffer): the metadata module writes
  // group_offsets[G + 1] and, with `visits`, the visit list padded to max_visits at visits_off = G + 1,
  // into the workspace (the operands' or the plan's own), then the dispatch reads it there. With the
  // indirect grid (options), the build writes the op's grid there too and the dispatch is indirect.
  struct DeviceMetadata {
    uint32_t num_groups = 0, group_offset = 0, num_local = 0, m = 0, tm = 1, fill_rows = 1, max_visits = 0;
    bool visits = false;
  };
  void set_device_metadata(const DeviceMetadata& d);
  // The workgroup grid (checked against the device's limits); never set: nothing to dispatch.
  void set_grid(uint64_t x, uint64_t y, uint64_t z);
  // The op's push constants, a struct from shaders/interface.h whose operand offsets the core fills in
  // at record time.
  template <class Push>
  void set_push(const Push& push) {
    static_assert(abi::starts_with_operand_offsets<Push>() && sizeof(Push) <= abi::kPushConstantBytes);
    push_.resize(sizeof(Push) / 4);
    std::memcpy(push_.data(), &push, sizeof(Push));
  }
  // Picks the modules and creates the pipelines (when there is a grid).
  void build();

  // ----- what the op's plan forwards -----
  const OperandSizes& sizes() const { return sizes_; }
  VkDeviceSize metadata_bytes() const { return meta_.size(); }
  VkDeviceSize workspace_bytes() const { return device_meta_ ? workspace_bytes_ : 0; }
  void check(const OperandViews& ops) const;
  bool texel_loads(const OperandViews& ops) const;
  void record(VkCommandBuffer cb, const OperandViews& ops) const;

 private:
  DispatchPlan(Context& ctx, Op op);
  struct Bound;
  Bound bind(const OperandViews& ops) const;
  // Checks the group sizes, workspace and status views, fills b's metadata dispatch; returns the
  // workspace's descriptor (what the op's kernel reads as its metadata).
  VkDescriptorBufferInfo bind_device_metadata(const OperandViews& ops, Bound& b) const;
  bool dispatches() const { return grid_[0] != 0; }

  std::shared_ptr<Context::Impl> ctx_;
  Op op_;
  OperandSpec operands_[3];  // lhs, rhs, out (existing_out: out's type and count)
  bool has_existing_ = false;
  OperandSizes sizes_;
  VkDeviceSize part_bytes_ = 0;  // > 0: operands are bound in parts of this size (the split layout)
  Kernel kernel_;
  Buffer meta_;
  uint32_t grid_[3] = {0, 0, 0};
  std::vector<uint32_t> push_;
  // Device metadata: its parameters, the workspace's size (the status slot is its last word) and the
  // metadata module's pipeline.
  std::optional<DeviceMetadata> device_meta_;
  // The plan takes the indirect grid (gmm's visit list, ContextOptions::device_grid), where its workspace
  // allows; the workspace holds the command's kDispatchWords after the visit list either way.
  bool indirect_ = false;
  static constexpr uint32_t kDispatchWords = 3;  // VkDispatchIndirectCommand {x, y, z}
  VkDeviceSize workspace_bytes_ = 0;
  VkPipeline meta_pipeline_ = VK_NULL_HANDLE;
};

// The views of any op's operand struct (they all hold lhs, rhs, out and existing_out).
template <class Operands>
OperandViews views_of(const Operands& ops) {
  return {ops.lhs, ops.rhs, ops.out, ops.existing_out, ops.group_sizes, ops.workspace, ops.status};
}

}  // namespace vkgmm
