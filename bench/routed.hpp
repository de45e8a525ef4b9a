// Workloads routed by expert ids (Workload::top_k > 0): vkgmm's routed gmm, its CPU reference, and what it
// is compared with in the same run: the unfused chain an engine runs without vkgmm's fusion, and the
// grouped gemm alone on rows sorted on the host.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runner.hpp"

namespace bench {

// Inputs uniform in [-1, 1) rounded to the workload's dtype: lhs [T, k] (or per slot, [T, top_k, k]), rhs
// [E, k, n] (block-format weights: [E, n, k] blocks along k, random floats quantized; `b` their dequantized
// values), with Workload::bias a bias [E, n] f32 in [-1, 1); the combined output is f32
// whatever the dtype (--dtype bf16: bf16 weights and activations), as the expert windows (below)
// accumulate through it: a 16-bit out would round every window's partial sum. The router's
// output (ids int32 [T, top_k], weights f32 [T, top_k]) is uploaded once to device buffers, as an engine's
// gate would leave it on the device.
class RoutedInstance {
 public:
  // shards: 0 for as few as the device's binding limit allows. lhs_source: lhs is that instance's per-slot
  // output buffer (a model layer's down projection reading its gate/up projection's result on the
  // device), no buf_a is made, and `a` must be set to its values before a reference is computed.
  RoutedInstance(vkgmm::Context& ctx, const Workload& w, const vkgmm::TilingChoice& tiling, int64_t shards = 0,
                 const RoutedInstance* lhs_source = nullptr);
  // Builds the plan (validation, pipeline lookup: the host's share of a call): combined, out [T, n] in
  // token order with the routing weights; or per slot, out [T, top_k, n].
  // With save_pre, the plan keeps each slot's pre-activation in its workspace (one shard only), where
  // saved_pre_activation() finds it: a training step's forward.
  void plan(const vkgmm::TilingChoice& tiling, bool combine, bool save_pre = false);
  vkgmm::BufferView saved_pre_activation() const { return plans_.front().saved_pre_activation(); }
  vkgmm::GmmProblem problem(bool combine) const;  // all E experts in one window (the reference's)
  std::string tiling_text() const;
  vkgmm::Tiling tiling() const;
  void record(VkCommandBuffer cb) const;
  uint32_t device_status() const;
  std::vector<Output> download() const;  // the current plan's output
  void poison_outputs() const;           // both outputs NaN (fill_with_nan), before a check's call

  // The experts are split into shards() windows of experts_per_shard() (the last may be smaller), each its
  // own rhs buffer and its own call (group_offset, E_local), the calls after the first accumulating
  // through existing_out = out, in place, behind a barrier: as an engine shards experts whose weights are
  // more than one buffer binding can address (ids mode binds rhs whole: at most maxStorageBufferRange,
  // 128 MiB on lavapipe, where Qwen3's experts are 805 MB in f32 and 403 MB in bf16).
  int64_t shards() const { return int64_t(buf_b.size()); }
  int64_t experts_per_shard() const { return per_shard_; }
  int64_t shard_experts(int64_t s) const { return std::min(per_shard_, work.groups - s * per_shard_); }

  vkgmm::Context& ctx;
  const Workload& work;
  std::vector<float> a, b, bias;
  vkgmm::Buffer buf_a, buf_ids, buf_weights, out_combined, out_slots, buf_status;
  std::vector<vkgmm::Buffer> buf_b;  // per shard: rhs [shard_experts(s), k, n] (or its blocks, [.., n, k])
  std::vector<vkgmm::Buffer> buf_bias;  // per shard, with Workload::bias: [shard_experts(s), n] f32

 private:
  int64_t per_shard_ = 0;
  std::vector<vkgmm::GmmPlan> plans_;  // per shard
  bool combine_ = true;
  const RoutedInstance* lhs_source_;
};

// The slots in expert order, each expert's in slot order (the order the routing build and the unfused
// chain's stable permutation give them): entry i is the slot at position i of the sorted rows.
std::vector<int32_t> expert_order(const Workload& w);

// Shader writes -> shader reads and writes (and the indirect grid a gmm's metadata build writes), between
// dispatches of one command buffer.
void compute_barrier(VkCommandBuffer cb);

// vkgmm::reference::gmm_routed's output for the instance (combined, or per slot), computed on narrow
// column blocks on every core as check.cpp does for gmm: each element is still the reference's own.
std::vector<Output> routed_reference(const RoutedInstance& inst, bool combine);

// The unfused chain (bench-only shaders in bench/shaders/), all on the device in one command buffer:
//   (a) count each expert's slots and build a stable permutation into expert order (one workgroup);
//   (b) gather the lhs rows into expert order [T * top_k, k];
//   (c) vkgmm gmm with device group sizes (DeviceGroupSizes: the counts of (a)) on the permuted rows,
//       fp32 out [T * top_k, n];
//   (d) un-permute and combine: out[t] = sum over j ascending of weights[t, j] * y[inv[t, j]], fp32,
//       [T, n] (f32, as ids mode's).
// Also the grouped gemm alone (`sorted`): the same gemm with the group sizes on the host, on lhs rows
// permuted on the host, fp32 out (what the kernel costs without any routing).
class UnfusedChain {
 public:
  static std::string unsupported_reason(const Workload& w);
  UnfusedChain(RoutedInstance& inst, const vkgmm::TilingChoice& tiling);
  ~UnfusedChain();
  void plan();          // the chain's gmm plan, rebuilt per call as vkgmm's is
  void plan_sorted();   // the sorted gemm's plan
  void record(VkCommandBuffer cb) const;
  void record_sorted(VkCommandBuffer cb) const;
  std::vector<Output> download() const;         // the chain's [T, n]
  std::vector<Output> download_sorted() const;  // the sorted gemm's rows put back in slot order [T * top_k, n]
  uint32_t device_status() const;
  void poison_outputs() const;  // the chain's and the sorted gemm's outputs NaN, before a check's call
  std::string tiling_text() const;
  std::string sorted_tiling_text() const;

 private:
  struct State;
  std::unique_ptr<State> st_;
};

}  // namespace bench
