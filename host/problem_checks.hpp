// The argument rules of docs/contract.md shared by every plan (internal). Each throws
// Error(invalid_argument or unsupported) whose message names the op, the argument and the rule.
#pragma once

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <utility>
#include <vector>

#include "vkgmm/context.hpp"
#include "vkgmm/ops.hpp"

namespace vkgmm {

// Groups (and a routed plan's local experts) a plan takes at most: tgmm's grid has a layer of workgroups
// per group, and every device allows 65535 in each dimension (maxComputeWorkGroupCount's minimum).
constexpr int64_t kMaxGroups = 65535;
// Refuses (unsupported) a count of groups past kMaxGroups, naming `what` and the count.
void check_group_count(const char* op, const char* what, int64_t count);

void check_dims(const char* op, int64_t m, int64_t k, int64_t n);
// Returns G. Rules: at least one group, every size >= 0, sum <= m.
int64_t check_group_sizes(const char* op, const std::vector<int32_t>& group_sizes, int64_t m);
// Group sizes on the device: their count (returns it) within what a plan supports, no host sizes beside
// them, a hint that is not negative.
int64_t check_device_group_sizes(const char* op, const std::vector<int32_t>& host_sizes,
                                 const DeviceGroupSizes& device);
// Element types f32 / f16 / bf16; with `rhs_blocks` (gmm) rhs may also be a block format.
void check_types(const char* op, DType lhs, DType rhs, DType out, bool rhs_blocks = false);
// The rules gmm and tgmm share: dims, group sizes on the host or their count on the device (returns G),
// element types.
int64_t check_grouped_problem(const char* op, int64_t m, int64_t k, int64_t n, const std::vector<int32_t>& group_sizes,
                              const DeviceGroupSizes& device, DType lhs, DType rhs, DType out, bool rhs_blocks);
// gmm routed by expert ids: top_k >= 0; with top_k > 0 no group sizes, E_local (num_rhs_groups) given,
// the window inside num_experts when that is known, T * top_k slots within what a plan supports.
// Without routing, none of routing's switches set. Returns E_local (routed) or -1.
int64_t check_routing(const char* op, const GmmProblem& p);
// gmm's epilogue: a known activation; swiglu needs an even product width n. Returns the output width.
int64_t check_epilogue(const char* op, const Epilogue& e, int64_t n);
// Every rule of a gmm problem that holds on any device (the routing, dims, group sizes or the window,
// element types, the epilogue, block formats' rows): the plan's check, and the backward's of its forward
// under its own name. Returns the problem as the kernel sees it.
struct GmmShape {
  bool routed = false;
  // Routed: the E_local local experts from group 0, the T * top_k slots; else the problem's.
  int64_t G = 0, g_local = 0, group_offset = 0, rows = 0;
  int64_t out_n = 0;  // output columns (a gated activation's product has 2 * out_n)
  // The operands' rows: routed, lhs has a row per token (or per slot: Routing::lhs_per_slot) and out a
  // row per slot (or per token: Routing::combine); else both the problem's m.
  int64_t lhs_rows = 0, out_rows = 0;
};
GmmShape check_gmm_problem(const char* op, const GmmProblem& p);
// The elements of an operand of groups x rows x cols (each >= 0, rows and cols below 2^31), refused as
// unsupported where the count passes 2^62, where a 64-bit product of the three could wrap to a small
// size (the operand checks refuse every count past 2^32 with their own message).
uint64_t element_count(const char* op, const char* what, int64_t groups, int64_t rows, int64_t cols);
// A window's count of groups: `requested`, or G - group_offset where it is -1 (num_rhs_groups' and
// num_actual_groups' default). check_group_window refuses any other negative value.
inline int64_t window_count(int64_t G, int64_t group_offset, int64_t requested) {
  return requested == -1 ? G - group_offset : requested;
}
// The window of active groups: 0 <= group_offset < G and 1 <= count <= G - group_offset, where count
// (named `count_name` in errors) is `requested`, or G - group_offset when requested is -1 (any other
// negative value is refused). Returns count.
int64_t check_group_window(const char* op, int64_t G, int64_t group_offset, int64_t requested,
                           const char* count_name);
// Operands vkgmm cannot bind even in parts, nor read through texel views up to `texel_reach` bytes (0:
// not an input read that way), throw Error(unsupported). Returns true when some operand needs more than
// one binding may address (allowing for an unaligned view start): the split layout, unless it is read
// through a texel view.
struct OperandLimit {
  const char* name;
  uint64_t bytes;
  uint64_t texel_reach = 0;
};
bool check_operand_limits(const char* op, const DeviceInfo& info, std::initializer_list<OperandLimit> operands);
void check_grid(const char* op, const DeviceInfo& info, uint64_t x, uint64_t y, uint64_t z);
// `items` workgroups along y, spread into z past the device's y limit (the shaders take item
// y + z * gl_NumWorkGroups.y): y the lesser of items and the limit, z = ceil(items / y), 0 x 0 for none.
struct SpreadYZ {
  uint64_t y = 0, z = 0;
};
inline SpreadYZ spread_yz(uint64_t items, const DeviceInfo& info) {
  const uint64_t y = std::min<uint64_t>(items, info.max_workgroup_count[1]);
  return {y, y ? (items + y - 1) / y : 0};
}
// An operand of a plan made as a part of another op, under the name the op's caller gave its view.
struct PartOperand {
  const char* operand;  // the part's ("out")
  const char* name;     // the op's ("d_lhs")
};
// Runs `check`, a part's check of the views the op gave it. Its refusal of one of `names`' operands
// ("gmm: out: view of ...") is the op's refusal of the caller's view ("gmm_backward: d_lhs: view of ...");
// any other refusal is the op's, naming the part ("gmm_backward: <part>: gmm: ...").
void check_as_part(const char* op, const char* part, std::initializer_list<PartOperand> names,
                   const std::function<void()>& check);
// existing_out, where given, is either `out` itself or disjoint from it (whether it is given is the
// operand table's rule, check_operand_presence).
void check_existing_view(const char* op, const BufferView& existing, const BufferView& out);
// An app's workspace view (null: the plan's own, not checked): at least `needed` bytes, at an offset a
// binding may start at (minStorageBufferOffsetAlignment).
void check_workspace_view(const char* op, const BufferView& workspace, VkDeviceSize needed, const DeviceInfo& info);

}  // namespace vkgmm
