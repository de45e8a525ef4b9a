// gmm, tgmm and the gmm backward: problems, plans (validate + metadata once) and recording.
//
// Plan, then record: a plan checks every argument against docs/contract.md and builds and uploads the group
// metadata; record() writes dispatches into a command buffer the caller owns and submits. The plan must
// outlive the execution of every command buffer it was recorded into. One plan may be recorded any number
// of times, into any number of command buffers, from any number of threads at once (a plan does not
// change after construction; docs/robustness.md says what else is thread-safe).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "vkgmm/context.hpp"
#include "vkgmm/types.hpp"
#include "vkgmm/vocabulary.h"

namespace vkgmm {

// Group sizes that live in a device buffer (docs/contract.md, "Group sizes on the device"), written by the
// app's own shaders earlier in the same command buffer: no host round trip. The plan is made from what
// the host knows (m as the row capacity, G, the window, the shapes); record() first builds the group
// metadata on the device, in the workspace, then runs the op on it. Results are bit-identical to the
// host path's for the same sizes and tiling.
//
// Sizes that break the contract are not refused (nothing reads them before the GPU runs) but taken as
// follows, so that nothing is read or written outside the operands' views and every dispatch ends: a
// negative size as 0, and every group offset clamped at m (rows past m belong to no group). The
// optional status word reports what was found (device_status bits; 0 for sizes that keep the contract).
struct DeviceGroupSizes {
  int64_t count = 0;          // G; 0: the problem's group_sizes are on the host (the default)
  int64_t expected_rows = 0;  // the automatic tiling's guess of one group's rows (0: m spread over G at random)
};
// Bits of the device status word.
namespace device_status {
constexpr uint32_t negative_size = 1;  // some size was negative (taken as 0)
constexpr uint32_t sum_above_m = 2;    // the sizes add up to more than m (offsets clamped at m)
constexpr uint32_t visits_cut = 4;     // internal: more visits than the plan's bound (never expected)
constexpr uint32_t bad_id = 8;         // routing: an id below -1, or >= Routing::num_experts (skipped)
// A routing one pass takes from another (MoeLayerPlan's, kept in its workspace) held a row-map entry past
// the slots, which no routing build writes: its words were rewritten between the passes. Rows stayed
// inside their views; the results are not the layer's. (Other rewrites of those words go unreported.)
constexpr uint32_t bad_routing = 16;
}  // namespace device_status

// Routing by expert ids (docs/contract.md, "Routing by expert ids"): gmm takes the router's output as it
// comes, ids [T, top_k] int32 in a device buffer (an expert index, or -1 for none), with T = the
// problem's m. record() counts the slots of each expert in the window [group_offset, group_offset +
// G_local) on the device, orders them (token order within an expert), gathers each slot's lhs row and
// writes the results per slot, or combined in token order with the routing weights, in one command
// sequence: no permutation pass and no host round trip. Ids outside the window (and -1) are skipped:
// shards of the experts accumulate through existing_out.
//   per slot (combine false):  out [T, top_k, n_out], out[t, j] = epi(lhs_row(t, j) @ W(ids[t, j])) for
//                              local slots, existing_out[t, j] (or 0) for the others;
//   combined (combine true):   out [T, n_out], out[t] = sum over local j, ascending, of
//                              weights[t, j] * epi(...), + existing_out[t] (or 0). Deterministic: per-slot
//                              fp32 results in the workspace, then an ordered sum (no float atomics).
// lhs_row(t, j) = lhs[t] ([T, k]), or lhs[t, j] with lhs_per_slot ([T, top_k, k]).
struct Routing {
  int64_t top_k = 0;          // slots per token; 0: no routing (rows grouped by group sizes)
  bool lhs_per_slot = false;  // lhs is [T, top_k, k], one row per slot (e.g. a down projection's input)
  bool combine = false;       // weights [T, top_k] f32 given: out in token order, [T, n_out]
  int64_t num_experts = 0;    // E, when known: ids >= E are counted in the status word (0: unknown)
};

// The epilogue fused into gmm's store (docs/contract.md, "Epilogues"), with group sizes or ids: product
// (+ bias) -> activation -> routing weight -> sum over slots -> + existing_out, all in fp32; only the
// stored value is rounded to the output type.
// The activations (none, swiglu, swiglu_oai, geglu) and their math are listed once, in
// vkgmm/vocabulary.h (VKGMM_ACTIVATIONS). The gated ones take the product's n columns as [gate | up] (n
// even) and give out n_out = n / 2 columns.
#define VKGMM_CPP_ACTIVATION_(name, NAME, value, gated) name = value,
enum class Activation : uint32_t { VKGMM_ACTIVATIONS(VKGMM_CPP_ACTIVATION_) };
#undef VKGMM_CPP_ACTIVATION_
// Its name ("unknown" for a value that is no Activation).
VKGMM_API const char* activation_name(Activation a);
// The activation activation_name() names `name`; nullopt for any other text. kActivationNames lists
// them, for messages: "none, swiglu, swiglu_oai, geglu".
VKGMM_API std::optional<Activation> activation_of_name(const char* name);
#define VKGMM_ACTIVATION_NAME_(name, NAME, value, gated) ", " #name
inline constexpr const char* kActivationNames = &VKGMM_ACTIVATIONS(VKGMM_ACTIVATION_NAME_)[2];  // past the first ", "
#undef VKGMM_ACTIVATION_NAME_
// Whether `a` is one of the listed activations (an Activation cast from any other number is not).
constexpr bool is_known(Activation a) {
#define VKGMM_ACTIVATION_IS_(name, NAME, value, gated) a == Activation::name ||
  return VKGMM_ACTIVATIONS(VKGMM_ACTIVATION_IS_) false;
#undef VKGMM_ACTIVATION_IS_
}
// Whether the activation takes [gate | up] halves of the product.
constexpr bool gated(Activation a) {
#define VKGMM_ACTIVATION_GATED_(name, NAME, value, gated) (a == Activation::name && gated) ||
  return VKGMM_ACTIVATIONS(VKGMM_ACTIVATION_GATED_) false;
#undef VKGMM_ACTIVATION_GATED_
}
struct Epilogue {
  bool bias = false;  // bias [G_local, n] f32 (n: the product's width), added before the activation
  Activation activation = Activation::none;
  // Routed by ids: the kernel also keeps each slot's pre-activation (product + bias, f32 [T, top_k, n])
  // in the workspace, where GmmPlan::saved_pre_activation() finds it: the backward's input
  // (GmmBackwardOperands::pre_activation), which it otherwise recomputes, to the same bits.
  bool save_pre_activation = false;
};

// out[m, n]: rows of active group g = lhs[rows] @ rhs[g - group_offset] (rhs^T with transpose_rhs);
// all other rows = existing_out (when given) or 0.
// With routing, m is the number of tokens T, group_sizes stay empty and num_rhs_groups (E_local) is
// required. n is always the product's width (rhs's columns); out has n_out = n, or n / 2 with a gated activation.
struct GmmProblem {
  int64_t m = 0, k = 0, n = 0;
  std::vector<int32_t> group_sizes;  // all G groups (empty with device_group_sizes)
  DeviceGroupSizes device_group_sizes;
  int64_t num_rhs_groups = -1;       // G_local, the groups rhs holds; -1: G - group_offset
  int64_t group_offset = 0;
  bool transpose_rhs = false;        // rhs is [G_local, n, k]
  DType lhs_type = DType::f32, rhs_type = DType::f32, out_type = DType::f32;
  bool existing_out = false;
  TilingChoice tiling;
  Schedule schedule = Schedule::automatic;
  Grid grid = Grid::automatic;  // ContextOptions::grid, when set, overrides it
  Routing routing;
  Epilogue epilogue;
};

// existing_out: leave .buffer null when the problem has none; it may be the same range as out.
// With device group sizes: group_sizes is the int32 [G] view (written before the commands record()
// adds run: your barrier, shader write -> shader read); workspace a view of the plan's
// workspace_bytes() whose offset is a multiple of minStorageBufferOffsetAlignment (null: the plan's own,
// which then makes executions of the plan that overlap in time race; refused on a context whose app gives
// every workspace, ContextOptions::app_workspaces); status an optional uint32 word
// (null: none). All three stay null on the host path.
// With routing: ids (int32 [T, top_k], written before record()'s commands run, like device group sizes),
// weights (f32 [T, top_k], with Routing::combine), workspace and status as with device group sizes. A
// combined call that reads its ids in the kernel ($VKGMM_ROUTE_IN_KERNEL=1, few slots) has no workspace
// (workspace_bytes() is 0): a workspace given is left unused.
// bias: f32 [G_local, n] with Epilogue::bias.
struct GmmOperands {
  BufferView lhs, rhs, out, existing_out;
  BufferView group_sizes, workspace, status;
  BufferView ids, weights, bias;
};

// out[j, k, n] = lhs[:, rows(group_offset + j)] @ rhs[rows(group_offset + j), :] (+ existing_out[j]).
struct TgmmProblem {
  int64_t m = 0, k = 0, n = 0;
  std::vector<int32_t> group_sizes;  // all G groups (empty with device_group_sizes)
  DeviceGroupSizes device_group_sizes;
  int64_t group_offset = 0;
  int64_t num_actual_groups = -1;  // -1: G - group_offset
  bool lhs_mk = false;             // lhs is stored [m, k] (the transpose of tgmm's [k, m])
  bool out_nk = false;             // each output group is stored [n, k] instead of [k, n]
  DType lhs_type = DType::f32, rhs_type = DType::f32, out_type = DType::f32;
  bool existing_out = false;
  TilingChoice tiling;
  Schedule schedule = Schedule::automatic;
  Grid grid = Grid::automatic;  // ContextOptions::grid, when set, overrides it
};

// As GmmOperands; workspace also where the plan splits a long group's reduction (workspace_bytes() > 0
// with the sizes on the host), with the same rules (null: the plan's own).
struct TgmmOperands {
  BufferView lhs, rhs, out, existing_out;
  BufferView group_sizes, workspace, status;
};

// Byte sizes each operand's view must have at least: exactly its elements (count * element size), for
// any element count. Where 16-bit storage is not used (the device or a wrapped app's device lacks
// storageBuffer16BitAccess, ContextOptions::storage16 is off, or an operand is too large for one binding)
// vkgmm reads and writes 16-bit data in whole 32-bit words; a vkgmm Buffer (Context::create_buffer) is
// allocated padded to whole words, so its views need nothing more. There, a view in an app's own VkBuffer
// whose 16-bit data ends mid-word must also cover the rest of that word (vkgmm cannot know the buffer has
// it, and never binds past a view it cannot vouch for): otherwise record() refuses it with
// invalid_argument naming the operand.
struct OperandSizes {
  VkDeviceSize lhs = 0, rhs = 0, out = 0, existing_out = 0;
};

class VKGMM_API GmmPlan {
 public:
  GmmPlan(Context& ctx, const GmmProblem& problem);
  const GmmProblem& problem() const;
  // The tiling that runs (after clamping to the shape and shared memory); where skewed groups take tile
  // heights of their own (a GPU, group sizes on the host: docs/architecture.md), the first pass's, whose
  // tm is the largest height.
  Tiling tiling() const;
  // The schedule the op's kernel runs: direct, shared or matrix, the automatic choice resolved. A GPU's
  // automatic schedule follows the groups' rows (decode-sized ones take the direct schedule) only where
  // the tiling is automatic too: to rerun a plan's choice with its tiling fixed (say with the sizes
  // moved to the device), fix both.
  Schedule schedule() const;
  OperandSizes sizes() const;
  // megablox's num_tiles: m-tile visits of the active groups at tiling()'s tm (-1: on the device).
  int64_t num_tiles() const;
  // Device memory the plan holds for its group metadata, allocated on the context's device at
  // construction and read by every dispatch it records; 0 when there is nothing to run. With device
  // group sizes, the plan's own workspace (used when the operands give none; none where
  // ContextOptions::app_workspaces is set).
  VkDeviceSize metadata_bytes() const;
  // With device group sizes or routing by ids: the bytes of the workspace record() builds the metadata in;
  // 0 where the plan reads the sizes or ids in its kernel (a few rows or slots), and without either.
  VkDeviceSize workspace_bytes() const;
  // Throws what record() would throw for these operands, recording nothing.
  void check(const GmmOperands& ops) const;
  // Whether record() with these (checked) operands reads lhs and rhs through texel views: only buffers
  // made by vkgmm's Context have them, where the device supports the formats (DeviceInfo); views of an
  // app's own VkBuffers are read as storage buffers, which is slower on CPU drivers such as lavapipe.
  bool texel_loads(const GmmOperands& ops) const;
  void record(VkCommandBuffer cb, const GmmOperands& ops) const;
  // With Epilogue::save_pre_activation: where record() left the pre-activation, f32 [T, top_k, n], in
  // `workspace` (the operands' workspace, or null for the plan's own); valid until the workspace is
  // next written. Throws Error(invalid_argument) for a plan that saves none, and for a null workspace
  // where ContextOptions::app_workspaces is set.
  BufferView saved_pre_activation(const BufferView& workspace = {}) const;

 private:
  // own_workspace false: a part of another plan, which always gives it a workspace (none allocated).
  // routing_given: routed, and recorded by its owner with another plan's routing: its own routing build
  // is compiled only if a record() gives none.
  GmmPlan(Context& ctx, const GmmProblem& problem, bool own_workspace, bool routing_given = false);
  struct VKGMM_HIDDEN State;  // the library's, exported with nothing
  std::shared_ptr<const State> state_;
  friend struct PlanInternals;  // the library's own tools (host/plan_internals.hpp)
};

class VKGMM_API TgmmPlan {
 public:
  TgmmPlan(Context& ctx, const TgmmProblem& problem);
  const TgmmProblem& problem() const;
  Tiling tiling() const;
  Schedule schedule() const;  // as GmmPlan::schedule()
  OperandSizes sizes() const;
  VkDeviceSize metadata_bytes() const;   // as GmmPlan::metadata_bytes()
  // On GPUs a group with far more rows than the others is reduced in chunks by several workgroups, whose
  // f32 partial sums the workspace holds (at most 16 slots of one output group each, within out's
  // elements again and 256 MiB; docs/architecture.md): with the sizes on the host where they are skewed,
  // else 0; with device group sizes GmmPlan::workspace_bytes()'s metadata plus those slots whatever the
  // sizes hold, the split decided on the device (the host path's bits). Executions that overlap in time
  // each need their own workspace view, as with device group sizes.
  VkDeviceSize workspace_bytes() const;
  void check(const TgmmOperands& ops) const;
  bool texel_loads(const TgmmOperands& ops) const;  // as GmmPlan::texel_loads()
  void record(VkCommandBuffer cb, const TgmmOperands& ops) const;

 private:
  TgmmPlan(Context& ctx, const TgmmProblem& problem, bool own_workspace);  // as GmmPlan's
  struct VKGMM_HIDDEN State;  // the library's, exported with nothing
  std::shared_ptr<const State> state_;
  friend struct PlanInternals;  // the library's own tools (host/plan_internals.hpp)
};

// The gradients of out = gmm(lhs, rhs, ...) for a cotangent d_out [m, n]:
//   d_lhs = gmm(d_out, rhs, transpose_rhs = !transpose_rhs)                [m, k]
//   d_rhs = tgmm(lhs^T, d_out) over the active groups                      [G_local, k, n] ([G_local, n, k]
//           when transpose_rhs), read straight from lhs [m, k]: lhs^T is never materialised.
// Rows outside the active groups get d_lhs = 0. d_out has the forward's out type; d_lhs and d_rhs have
// the types of lhs and rhs, as in JAX.
// With device group sizes, group_sizes, workspace (workspace_bytes(), aligned as GmmOperands') and status
// as GmmOperands'.
//
// A forward routed by expert ids (Routing) and any epilogue (bias, activation) has its backward too
// (docs/routing-and-epilogues.md, "The backward"): ids, weights and bias are the forward's views, d_out is
// [T, top_k, n_out] per slot or [T, n_out] combined, and the gradients are
//   d_lhs [T, k] (summed over the token's local slots) or [T, top_k, k] with lhs_per_slot (0 for the
//         other slots);
//   d_rhs [E_local, k, n] (as rhs): each local expert's sum over its slots, in token order;
//   d_bias f32 [E_local, n] with Epilogue::bias (its view may stay null: not computed);
//   d_weights f32 [T, top_k] with Routing::combine: <d_out[t], the slot's activation output> for local
//         slots, 0 for the others (null: not computed).
// The product + bias per slot is the forward's saved pre-activation (pre_activation) or recomputed into
// the workspace by the same kernel (the same bits), then one pass takes d_out through the activation and
// gathers each local slot's lhs row in expert order, then tgmm gives d_rhs (and d_bias) and
// a routed gmm with the flipped transpose d_lhs: every sum in a fixed order, the same bits on every run.
// The workspace is always used (the plan's own when the operands give none: executions that overlap in
// time then race; refused where ContextOptions::app_workspaces is set); the status word reports the ids
// as the forward's does.
struct GmmBackwardOperands {
  BufferView lhs, rhs, d_out, d_lhs, d_rhs;
  BufferView group_sizes, workspace, status;
  BufferView ids, weights, bias;  // the forward's (routed; with Routing::combine; with Epilogue::bias)
  BufferView d_bias, d_weights;   // optional outputs, with Epilogue::bias and Routing::combine
  // Routed (or with an epilogue): the forward's saved pre-activation (GmmPlan::saved_pre_activation(),
  // f32 [T, top_k, n]); null: the backward recomputes it (the same bits, one more matmul).
  BufferView pre_activation;
};

// Byte sizes each view of GmmBackwardOperands must have at least (exactly, as OperandSizes').
struct GmmBackwardSizes {
  VkDeviceSize lhs = 0, rhs = 0, d_out = 0, d_lhs = 0, d_rhs = 0;
  VkDeviceSize ids = 0, weights = 0, bias = 0, d_bias = 0, d_weights = 0;  // 0: the forward has none
  VkDeviceSize pre_activation = 0;  // routed: T * top_k * n * 4 (0: not routed)
};

struct GmmBackwardOptions {
  // Shards of the experts (group_offset, num_rhs_groups) assemble one d_lhs and d_weights in place: rows
  // (or slots) of no active group keep what d_lhs holds instead of becoming 0, and what several shards
  // share adds to it: a routed token-level d_lhs (the sum over the token's slots, a combine) and
  // d_weights. Run every shard's backward into the same views: the result is the whole layer's.
  bool accumulate = false;
};

// Weights in a block format (DType::q4_0, ...) are frozen: their gradient is not computed (adapter
// fine-tuning), only d_lhs; d_rhs (and lhs, read only for it) stay null, and the status word is d_lhs's.
// (Routed without a saved pre-activation, lhs is read for the recomputed product all the same.)
struct RoutedBackward;  // the routed backward's other passes (internal)
struct RoutingSource;   // a routing another plan built (internal)
class VKGMM_API GmmBackwardPlan {
 public:
  GmmBackwardPlan(Context& ctx, const GmmProblem& forward, const GmmBackwardOptions& options = {});
  const GmmPlan& d_lhs_plan() const { return d_lhs_; }
  // Throws Error(invalid_argument) for frozen weights (frozen_rhs()), and for a routed shard with no
  // local expert (num_rhs_groups = 0: nothing to compute).
  const TgmmPlan& d_rhs_plan() const;
  bool frozen_rhs() const { return frozen_; }
  GmmBackwardSizes sizes() const;
  // The device memory the plan holds: its two plans' (as GmmPlan::metadata_bytes()) and, routed, its
  // own workspace.
  VkDeviceSize metadata_bytes() const;
  VkDeviceSize workspace_bytes() const;  // the plans' and the routed backward's, each at an aligned offset
  // Throws what record() would throw for these operands, recording nothing.
  void check(const GmmBackwardOperands& ops) const;
  // Unrouted, both dispatches are independent: no barrier between them. Routed, the passes above with
  // their barriers.
  void record(VkCommandBuffer cb, const GmmBackwardOperands& ops) const;

 private:
  // own_workspace false: a part of another plan, which always gives it a workspace (its passes' plans
  // and the routed backward allocate none). routing_given: routed, and recorded by its owner with the
  // forward's routing (as GmmPlan's).
  GmmBackwardPlan(Context& ctx, const GmmProblem& forward, const GmmBackwardOptions& options, bool own_workspace,
                  bool routing_given = false);
  void check_or_record(VkCommandBuffer cb, const GmmBackwardOperands& ops, bool record_it,
                       const RoutingSource* routing = nullptr) const;
  friend struct PlanInternals;  // the library's own tools (host/plan_internals.hpp)
  GmmPlan d_lhs_;
  bool frozen_ = false;            // block-format weights: no d_rhs
  bool app_workspace_ = false;     // unrouted, on a context whose app gives every workspace: its parts have none
  std::optional<TgmmPlan> d_rhs_;  // none: frozen weights, or no local expert
  VkDeviceSize d_rhs_workspace_offset_ = 0;  // unrouted: the workspace holds d_lhs's share, then d_rhs's
  std::shared_ptr<const RoutedBackward> routed_;  // routed by expert ids (internal)
};

// Conveniences: plan, record into a one-time command buffer, submit and wait.
VKGMM_API void gmm(Context& ctx, const GmmProblem& problem, const GmmOperands& ops);
VKGMM_API void tgmm(Context& ctx, const TgmmProblem& problem, const TgmmOperands& ops);
VKGMM_API void gmm_backward(Context& ctx, const GmmProblem& forward, const GmmBackwardOperands& ops,
                            const GmmBackwardOptions& options = {});

}  // namespace vkgmm
