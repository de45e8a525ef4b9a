// Model presets (`vkgmm bench --model NAME`): the expert matmuls of one MoE layer of a published model at
// its own shapes. A model is a table row; a layer is two routed workloads sharing one router: the gate/up
// projection (the token's activations gathered by expert ids, [gate | up] with its gated activation fused, per slot)
// and the down projection (its per-slot result, the output combined in token order with the weights).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vkgmm/types.hpp"
#include "workloads.hpp"

namespace bench {

struct ModelSpec {
  const char* name;            // --model NAME
  const char* title;           // as the model card names it
  int64_t experts, top_k;      // routed experts (shared experts, which are not routed, are not benched)
  int64_t hidden, expert_size; // hidden_size -> the expert FFN's intermediate size
  bool bias;                   // a per-expert bias on both projections
  vkgmm::Activation activation; // the gated activation between them
  vkgmm::DType activations;    // what the model computes in
  std::optional<vkgmm::DType> weights;  // the expert weights it ships in, when a block format
  const char* citation;        // the published config.json the figures are from
  const char* note;            // how the bench's layer differs from the model's, or ""
};

const std::vector<ModelSpec>& model_specs();
const ModelSpec* find_model(const std::string& name);

// Tokens per layer call a model preset runs by default: decode (1, 8) and prefill (512, 4096).
const std::vector<int64_t>& default_model_tokens();

// --scale S: hidden and expert sizes divided by S, each rounded to the nearest multiple of `quantum` (32,
// or the weight format's block when larger: 256 for the K formats) and at least one quantum; the experts,
// top-k and the tokens stay the model's. S = 1: the published sizes (whole blocks already).
int64_t scaled_size(int64_t size, int64_t scale, int64_t quantum);

// One MoE layer of a model at T tokens.
struct ModelLayer {
  const ModelSpec* model = nullptr;
  int64_t scale = 1, tokens = 0;
  Workload up, down;  // routed by the same ids: up per slot, down combined
  std::string name() const;  // "<model>/t<T>"
};

// The layer's two workloads with `dtype` activations and `weights` expert weights (nullopt: dtype's), the
// down projection's `down_weights` where given, routed by the seeded router (make_routing) with `seed`.
// Returns an empty string, or why the shapes do not work (k not whole blocks of the weight format).
std::string make_model_layer(const ModelSpec& m, int64_t scale, int64_t tokens, vkgmm::DType dtype,
                             std::optional<vkgmm::DType> weights, std::optional<vkgmm::DType> down_weights,
                             uint32_t seed, ModelLayer& out);

}  // namespace bench
