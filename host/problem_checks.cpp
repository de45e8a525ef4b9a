// The argument rules of docs/contract.md shared by every plan.
#include "problem_checks.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "operand_table.hpp"
#include "operands.hpp"
#include "workspace_arena.hpp"

namespace vkgmm {

namespace {
[[noreturn]] void bad(const char* op, const std::string& what) {
  throw Error(Status::invalid_argument, std::string(op) + ": " + what);
}
}  // namespace

void check_dims(const char* op, int64_t m, int64_t k, int64_t n) {
  if (m < 0) bad(op, "m = " + std::to_string(m) + " must be >= 0");
  if (k < 1) bad(op, "k = " + std::to_string(k) + " must be >= 1");
  if (n < 1) bad(op, "n = " + std::to_string(n) + " must be >= 1");
  if (m > INT32_MAX || k > INT32_MAX || n > INT32_MAX)
    throw Error(Status::unsupported, std::string(op) + ": m, k and n must each be below 2^31");
}

int64_t check_routing(const char* op, const GmmProblem& p) {
  const Routing& r = p.routing;
  if (r.top_k < 0) bad(op, "routing.top_k = " + std::to_string(r.top_k) + " must be >= 0 (0: not routed)");
  if (r.top_k == 0) {
    if (r.combine) bad(op, "routing.combine: set, but the problem is not routed (routing.top_k = 0)");
    if (r.lhs_per_slot) bad(op, "routing.lhs_per_slot: set, but the problem is not routed (routing.top_k = 0)");
    if (r.num_experts) bad(op, "routing.num_experts: set, but the problem is not routed (routing.top_k = 0)");
    return -1;
  }
  if (!p.group_sizes.empty() || p.device_group_sizes.count || p.device_group_sizes.expected_rows)
    bad(op, "group_sizes: given, but the problem is routed by expert ids (routing.top_k > 0): give one or the other");
  if (p.num_rhs_groups < 0)
    bad(op, "num_rhs_groups: a routed problem must give the experts rhs holds (E_local >= 0)");
  if (p.group_offset < 0) bad(op, "group_offset = " + std::to_string(p.group_offset) + " must be >= 0");
  if (r.num_experts < 0) bad(op, "routing.num_experts = " + std::to_string(r.num_experts) + " must be >= 0 (0: unknown)");
  if (p.group_offset > INT32_MAX)  // before the window's sum, which could overflow
    throw Error(Status::unsupported, std::string(op) + ": routing: group_offset = " + std::to_string(p.group_offset) +
                                         " must be below 2^31");
  check_group_count(op, "num_rhs_groups (routing's local experts)", p.num_rhs_groups);
  if (r.num_experts && p.group_offset + p.num_rhs_groups > r.num_experts)
    bad(op, "routing.num_experts = " + std::to_string(r.num_experts) + " is smaller than group_offset + E_local = " +
                std::to_string(p.group_offset + p.num_rhs_groups));
  if (r.num_experts > INT32_MAX)
    throw Error(Status::unsupported, std::string(op) + ": routing: num_experts = " + std::to_string(r.num_experts) +
                                         " must be below 2^31");
  if (r.top_k > INT32_MAX || (p.m > 0 && r.top_k > INT32_MAX / p.m))
    throw Error(Status::unsupported, std::string(op) + ": routing: T * top_k = " + std::to_string(p.m * r.top_k) +
                                         " slots, at most 2^31 - 1 are supported");
  return p.num_rhs_groups;
}

int64_t check_epilogue(const char* op, const Epilogue& e, int64_t n) {
  if (!is_known(e.activation))
    bad(op, "epilogue.activation = " + std::to_string(uint32_t(e.activation)) + " is not an activation vkgmm knows");
  if (!gated(e.activation)) return n;
  if (n % 2)
    bad(op, "n = " + std::to_string(n) + ": activation " + activation_name(e.activation) +
                " needs an even product width ([gate | up])");
  return n / 2;
}

int64_t check_grouped_problem(const char* op, int64_t m, int64_t k, int64_t n, const std::vector<int32_t>& group_sizes,
                              const DeviceGroupSizes& device, DType lhs, DType rhs, DType out, bool rhs_blocks) {
  check_dims(op, m, k, n);
  const int64_t G = device.count || device.expected_rows ? check_device_group_sizes(op, group_sizes, device)
                                                          : check_group_sizes(op, group_sizes, m);
  check_types(op, lhs, rhs, out, rhs_blocks);
  return G;
}

GmmShape check_gmm_problem(const char* op, const GmmProblem& p) {
  GmmShape r;
  // Routed by expert ids, the kernel's rows are the T * top_k slots in expert order (the routing build's
  // row map) and its groups the E_local local experts, from group 0; else the problem's rows and groups.
  const int64_t routed_experts = check_routing(op, p);
  r.routed = routed_experts >= 0;
  r.group_offset = p.group_offset;
  r.rows = p.m;
  if (r.routed) {
    check_dims(op, p.m, p.k, p.n);
    check_types(op, p.lhs_type, p.rhs_type, p.out_type, true);
    r.G = r.g_local = routed_experts;
    r.group_offset = 0;
    r.rows = p.m * p.routing.top_k;
  } else {
    r.G = check_grouped_problem(op, p.m, p.k, p.n, p.group_sizes, p.device_group_sizes, p.lhs_type, p.rhs_type,
                                p.out_type, true);
    r.g_local = check_group_window(op, r.G, p.group_offset, p.num_rhs_groups, "num_rhs_groups (rhs.shape[0])");
  }
  r.out_n = check_epilogue(op, p.epilogue, p.n);
  r.lhs_rows = r.routed && !p.routing.lhs_per_slot ? p.m : r.rows;
  r.out_rows = r.routed && p.routing.combine ? p.m : r.rows;
  if (p.epilogue.save_pre_activation && !r.routed)
    bad(op, "epilogue.save_pre_activation: only a gmm routed by ids (routing.top_k > 0) keeps its pre-activation "
            "(in its workspace); with group sizes the backward recomputes it");
  if (is_quantized(p.rhs_type)) {
    // Blocks lie along rhs's contiguous axis, each row whole blocks (GGUF's [n, k] expert rows).
    const int64_t B = int64_t(block_elements(p.rhs_type)), along = p.transpose_rhs ? p.k : p.n;
    if (along % B != 0)
      bad(op, std::string("rhs: ") + dtype_name(p.rhs_type) + " blocks of " + std::to_string(B) +
                  " values lie along rhs's rows: " + (p.transpose_rhs ? "k" : "n") + " = " + std::to_string(along) +
                  " must be a multiple of " + std::to_string(B) +
                  (p.transpose_rhs ? " (rhs [G_local, n, k])" : " (rhs [G_local, k, n])"));
  }
  return r;
}

void check_group_count(const char* op, const char* what, int64_t count) {
  if (count > kMaxGroups)
    throw Error(Status::unsupported, std::string(op) + ": " + what + " = " + std::to_string(count) + ": at most " +
                                         std::to_string(kMaxGroups) + " groups are supported");
}

int64_t check_group_sizes(const char* op, const std::vector<int32_t>& group_sizes, int64_t m) {
  if (group_sizes.empty()) bad(op, "group_sizes must hold at least one group");
  check_group_count(op, "group_sizes' count", int64_t(group_sizes.size()));
  int64_t sum = 0;
  for (size_t g = 0; g < group_sizes.size(); ++g) {
    if (group_sizes[g] < 0)
      bad(op, "group_sizes[" + std::to_string(g) + "] = " + std::to_string(group_sizes[g]) + " is negative");
    sum += group_sizes[g];
  }
  if (sum > m) bad(op, "sum(group_sizes) = " + std::to_string(sum) + " exceeds m = " + std::to_string(m));
  return static_cast<int64_t>(group_sizes.size());
}

int64_t check_device_group_sizes(const char* op, const std::vector<int32_t>& host_sizes,
                                 const DeviceGroupSizes& device) {
  if (device.count < 1)
    bad(op, "device_group_sizes.count = " + std::to_string(device.count) + " must be >= 1 (G)");
  check_group_count(op, "device_group_sizes.count", device.count);
  if (!host_sizes.empty())
    bad(op, "group_sizes: the problem has device_group_sizes; leave the host group_sizes empty");
  if (device.expected_rows < 0)
    bad(op, "device_group_sizes.expected_rows = " + std::to_string(device.expected_rows) + " must be >= 0");
  return device.count;
}

void check_types(const char* op, DType lhs, DType rhs, DType out, bool rhs_blocks) {
  auto valid = [](DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; };
  if (rhs_blocks && is_quantized(rhs)) rhs = DType::f32;  // stands for any block format here
  const std::string takes = "; f32, f16 or bf16)";
  if (!valid(lhs)) bad(op, std::string("lhs has an unsupported element type (") + dtype_name(lhs) + takes);
  if (!valid(rhs))
    bad(op, std::string("rhs has an unsupported element type (") + dtype_name(rhs) +
                (rhs_blocks ? "; f32, f16, bf16 or a block format)" : takes));
  if (!valid(out))
    bad(op, std::string("out (out_type, Python's preferred_element_type) has an unsupported element type (") +
                dtype_name(out) + takes);
}

uint64_t element_count(const char* op, const char* what, int64_t groups, int64_t rows, int64_t cols) {
  constexpr uint64_t kMost = uint64_t(1) << 62;
  const uint64_t g = uint64_t(std::max<int64_t>(groups, 0)), r = uint64_t(std::max<int64_t>(rows, 0)),
                 c = uint64_t(std::max<int64_t>(cols, 0));
  const uint64_t rc = r * c;  // below 2^62: rows and cols are below 2^31
  if (g && rc > kMost / g)
    throw Error(Status::unsupported, std::string(op) + ": " + what + ": " + std::to_string(g) + " x " +
                                         std::to_string(r) + " x " + std::to_string(c) +
                                         " elements, past the 2^32 elements a view can hold");
  return g * rc;
}

int64_t check_group_window(const char* op, int64_t G, int64_t group_offset, int64_t requested,
                           const char* count_name) {
  if (group_offset < 0 || group_offset >= G)
    bad(op, "group_offset = " + std::to_string(group_offset) + " must be in [0, " + std::to_string(G) + ")");
  if (requested < -1)
    bad(op, std::string(count_name) + " = " + std::to_string(requested) + " must be >= 0, or -1 (G - group_offset)");
  const int64_t count = window_count(G, group_offset, requested);
  if (count < 1 || group_offset + count > G)
    bad(op, std::string(count_name) + " = " + std::to_string(count) + " must be in [1, " +
                std::to_string(G - group_offset) + "] (group_offset + " + count_name +
                " <= len(group_sizes) = " + std::to_string(G) + ")");
  return count;
}

bool check_operand_limits(const char* op, const DeviceInfo& info, std::initializer_list<OperandLimit> operands) {
  // A view may start up to max(alignment, 16) - 1 bytes past its aligned binding offset (bind_operand).
  const uint64_t slack = operand_binding_alignment(info);
  const uint64_t limit = split_part_bytes(info) * kMaxParts;
  bool split = false;
  for (const OperandLimit& o : operands) {
    if (o.bytes + slack > limit && o.bytes > o.texel_reach)
      throw Error(Status::unsupported,
                  std::string(op) + ": " + o.name + " is " + std::to_string(o.bytes) +
                      " bytes, more than vkgmm can bind on this device (" + std::to_string(limit - slack) + ": " +
                      std::to_string(kMaxParts) + " parts of maxStorageBufferRange " +
                      std::to_string(info.max_storage_buffer_range) + ")" +
                      (o.texel_reach ? " or read through a texel view (" + std::to_string(o.texel_reach) + ")" : ""));
    split = split || o.bytes + slack > info.max_storage_buffer_range;
  }
  return split;
}

void check_grid(const char* op, const DeviceInfo& info, uint64_t x, uint64_t y, uint64_t z) {
  if (x > info.max_workgroup_count[0] || y > info.max_workgroup_count[1] || z > info.max_workgroup_count[2])
    throw Error(Status::unsupported, std::string(op) + ": the grid " + std::to_string(x) + " x " + std::to_string(y) +
                                         " x " + std::to_string(z) +
                                         " exceeds the device's maxComputeWorkGroupCount: use larger tiles");
}

void check_as_part(const char* op, const char* part, std::initializer_list<PartOperand> names,
                   const std::function<void()>& check) {
  try {
    check();
  } catch (const Error& e) {
    const std::string m = e.what();
    const size_t op_end = m.find(": ");
    const size_t operand_end = op_end == std::string::npos ? op_end : m.find(": ", op_end + 2);
    if (operand_end != std::string::npos) {
      const std::string operand = m.substr(op_end + 2, operand_end - op_end - 2);
      for (const PartOperand& n : names)
        if (operand == n.operand)
          throw Error(e.status(), std::string(op) + ": " + n.name + ": " + m.substr(operand_end + 2));
    }
    throw Error(e.status(), std::string(op) + ": " + part + ": " + m);
  }
}

void check_existing_view(const char* op, const BufferView& existing, const BufferView& out) {
  if (existing.buffer && views_overlap(existing, out) && (existing.offset != out.offset))
    bad(op, "existing_out overlaps out without being the same range");
}

void check_workspace_view(const char* op, const BufferView& workspace, VkDeviceSize needed, const DeviceInfo& info) {
  if (!workspace.buffer) return;
  const VkDeviceSize align = std::max<VkDeviceSize>(info.min_storage_buffer_offset_alignment, 4);
  if (workspace.offset % align != 0)
    bad(op, "workspace: offset " + std::to_string(workspace.offset) +
                " is not a multiple of minStorageBufferOffsetAlignment (" + std::to_string(align) + ")");
  if (workspace.size < needed)
    bad(op, "workspace: view of " + std::to_string(workspace.size) + " bytes is too small: the plan needs " +
                std::to_string(needed) + " (workspace_bytes())");
}

namespace {
enum class Presence { refused, optional, required };
struct Rule {
  Presence presence;
  const char* why = "";
};

Rule presence_rule(OperandWhen when, const PlanFacts& p) {
  constexpr const char* host_sizes = "the problem's group sizes are on the host";
  constexpr const char* unrouted = "the problem is not routed (Routing::top_k is 0)";
  switch (when) {
    case OperandWhen::bound:
      return {Presence::optional};
    case OperandWhen::existing:
      return p.existing ? Rule{Presence::required, "the problem has existing_out"}
                        : Rule{Presence::refused, "the problem has existing_out = false"};
    case OperandWhen::device_sizes:
      if (!p.device_metadata) return {Presence::refused, host_sizes};
      return p.routed ? Rule{Presence::refused, "the problem is routed by expert ids (the ids give the groups)"}
                      : Rule{Presence::required, "the problem's group sizes are on the device"};
    case OperandWhen::device_metadata:
      return p.device_metadata ? Rule{Presence::optional} : Rule{Presence::refused, host_sizes};
    case OperandWhen::workspace:
      if (p.workspace && p.app_workspace) return {Presence::required, kNoOwnWorkspace};
      // A routed plan that reads its ids in the kernel (a combined call of few slots) has none, and leaves
      // one given unused: an app routes every call with one, whatever its size; likewise a plan that reads
      // its group sizes on the device in the kernel (a call of few rows).
      if (p.workspace || p.routed || p.device_metadata) return {Presence::optional};
      return {Presence::refused, "the plan needs none (workspace_bytes() is 0: the group sizes are on the host "
                                 "and no group's reduction is split)"};
    case OperandWhen::routed:
      return p.routed ? Rule{Presence::required, "the problem is routed"} : Rule{Presence::refused, unrouted};
    case OperandWhen::combined:
      if (!p.routed) return {Presence::refused, unrouted};
      return p.combine ? Rule{Presence::required, "the problem combines the slots (Routing::combine)"}
                       : Rule{Presence::refused, "the problem writes every slot's result (Routing::combine is off)"};
    case OperandWhen::bias:
      if (!p.bias) return {Presence::refused, "the problem has no bias (Epilogue::bias)"};
      return p.bias_read ? Rule{Presence::required, "the problem has a bias (Epilogue::bias)"} : Rule{Presence::optional};
  }
  return {Presence::optional};
}

// The views in the table's row order, as the table checks take them.
std::array<BufferView, kOperandCount> in_row_order(const OperandViews& views) {
  std::array<BufferView, kOperandCount> v;
  for (size_t o = 0; o < kOperandCount; ++o) v[o] = views[OperandId(o)];
  return v;
}
}  // namespace

void check_operand_presence(const char* op, const OperandViews& views, const PlanFacts& plan) {
  const std::array<BufferView, kOperandCount> v = in_row_order(views);
  auto why_if = [&](size_t o, Presence p) -> const char* {
    const Rule rule = presence_rule(kOperandRows[o].when, plan);
    return rule.presence == p ? rule.why : nullptr;
  };
  check_table_presence(
      op, kOperandRows, v.data(), kOperandCount, [&](size_t o) { return why_if(o, Presence::refused); },
      [&](size_t o) { return why_if(o, Presence::required); });
}

void check_operand_overlaps(const char* op, const OperandViews& views) {
  // existing_out may be out itself (check_existing_view).
  check_table_overlaps(op, kOperandRows, in_row_order(views).data(), kOperandCount,
                       {size_t(OperandId::out), size_t(OperandId::existing_out)});
}

}  // namespace vkgmm
