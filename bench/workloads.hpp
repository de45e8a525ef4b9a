// What the bench measures: a workload is one op on one shape with one routing of rows to groups.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vkgmm/ops.hpp"
#include "routing_draws.hpp"
#include "vkgmm/types.hpp"

namespace bench {

enum class Op { gmm, tgmm, backward };
const char* op_name(Op op);
bool parse_op(const std::string& s, Op& op);

const char* dist_name(Dist d);
bool parse_dist(const std::string& s, Dist& d);

struct Workload {
  std::string name;
  Op op = Op::gmm;
  int64_t m = 0, k = 0, n = 0, groups = 0;
  Dist dist = Dist::random;
  int64_t empty_groups = 0;  // groups forced to receive no rows (on top of any the distribution leaves empty)
  vkgmm::DType dtype = vkgmm::DType::f32;
  // Expert weights (rhs) in one of GGUF's block formats (vkgmm::block_format_names(); gmm only), or
  // nullopt: rhs of `dtype` like every operand. Quantized weights are stored as GGUF stores expert
  // tensors, [G, n, k] (transpose_rhs), blocks along k: random floats quantized with vkgmm::quant and
  // uploaded as raw blocks; the reference takes their dequantized values. lhs and out stay `dtype`.
  std::optional<vkgmm::DType> rhs_format;
  bool quantized() const { return rhs_format.has_value(); }
  vkgmm::DType rhs_type() const { return rhs_format.value_or(dtype); }
  bool transpose_rhs() const { return quantized(); }
  uint32_t seed = 1;
  std::vector<int32_t> group_sizes;  // filled by make_group_sizes; sums to m (ids: slots per expert)
  // Routing by expert ids (vkgmm::Routing) when top_k > 0: m is the number of tokens T, groups the number
  // of experts E (all local), and make_routing fills ids and route_weights ([T, top_k] each) and
  // group_sizes (each expert's slots, summing to T * top_k). The output is combined in token order with
  // the routing weights, [T, n] f32 (also timed per slot, [T, top_k, n]); dtype is lhs's and rhs's.
  // With op backward (moe-grad-ids): the backward of that combined forward (bench/routed_grad.hpp).
  int64_t top_k = 0;
  std::vector<int32_t> ids;
  std::vector<float> route_weights;
  bool routed() const { return top_k > 0; }
  // One projection of a model's MoE layer (bench/models.hpp), routed only. combine: the output in token
  // order with the routing weights, [T, n_out] f32 (false: per slot, [T, top_k, n_out] in slots_type, as a
  // gate/up projection leaves it for the down projection). lhs_per_slot: lhs [T, top_k, k] (a down
  // projection's input). A gated activation: n is [gate | up], n_out = n / 2. bias: a per-expert f32 bias [E, n].
  bool combine = true, lhs_per_slot = false, bias = false;
  vkgmm::Activation activation = vkgmm::Activation::none;
  vkgmm::DType slots_type = vkgmm::DType::f32;
  int64_t n_out() const { return vkgmm::gated(activation) ? n / 2 : n; }
  int64_t lhs_rows() const { return lhs_per_slot ? m * top_k : m; }
};

// The named presets, in the order `vkgmm bench` runs them; false for an unknown name.
const std::vector<std::string>& preset_names();
// The presets routed by expert ids (ids-decode, Qwen3-30B-A3B's experts at T = 1, 8, 64, 512, and
// moe-grad-ids, a routed backward): `--presets ids`; not in a default run.
const std::vector<std::string>& ids_preset_names();
// `--presets quant`: the weight formats, each beside its unquantized peer in the same run:
// ids-decode with f32 weights and q4_0 (plus q6_K and mxfp4), moe-prefill's shape with bf16 weights
// against q8_0 and q4_K. Not in a default run.
const std::vector<std::string>& quant_preset_names();
bool make_preset(const std::string& name, Workload& w);

// Bytes of the rhs one call must read at least: the selected experts (routed) or all G, in rhs's type
// (storage_bytes of the block format for quantized weights).
double rhs_bytes(const Workload& w);

// The seeded router (draw_router, routing_draws.hpp) over (m tokens, groups experts, top_k, seed): fills
// w.ids, w.route_weights and w.group_sizes (slots per expert). Requires top_k <= groups.
void make_routing(Workload& w);
// The experts that receive at least one slot (their weights are what a routed call must read).
int64_t distinct_experts(const Workload& w);

// Useful FLOPs of one call (2 per multiply-add): gmm 2*rows*k*n over the rows of the groups; tgmm the
// same over the groups' rows; backward both. Routed by ids: 2*T*top_k*k*n (every slot is local); its
// backward 4*T*top_k*k*n (d_lhs and d_rhs; it reads the product its forward saved).
double flops(const Workload& w);
// Bytes one call must at least read and write: every input once (of the weights, the groups' with rows),
// every output once. Routed by ids: the
// selected experts' weights (and biases) once, the activations ([T, k] or per slot) and the output
// (combined [T, n_out] f32, or per slot in slots_type); its backward: lhs, the selected experts' weights
// and d_out [T, n] f32 and the slots' saved products [T * top_k, n] f32 read, d_lhs, their d_rhs and
// d_weights [T, top_k] f32 written.
double bytes(const Workload& w);

}  // namespace bench
