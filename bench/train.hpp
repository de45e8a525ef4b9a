// `vkgmm bench --model NAME --train`: a model layer's expert part as vkgmm::MoeLayerPlan runs it in
// training (router, top-k, both projections, and the backward of all of them), its inputs on the device,
// what each timed call records, and the check of its results against the CPU reference.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models.hpp"
#include "vkgmm/context.hpp"
#include "vkgmm/moe_layer.hpp"

namespace bench {

// A layer's training times (JSON "train"), or why the library refused its shapes.
struct TrainResult {
  std::string skipped;  // the library's message; empty when the layer ran (then the times are set)
  double forward_ms = 0;           // record_forward alone (median gpu ms)
  double backward_ms = 0;          // record_backward alone, reading the saved words of a forward before it
  double forward_backward_ms = 0;  // record_forward then record_backward in one command buffer
  int reps = 0;
  int64_t checked_tokens = 0;  // tokens whose y and d_x rows were compared with the CPU reference
  uint64_t timed_calls = 0, evictions = 0;
};

// The MoeLayerProblem of a model layer: its tokens, scaled sizes, experts, top-k, activation, biases,
// activations' type and weights' type (a block format freezes the weights: no gradient of theirs).
vkgmm::MoeLayerProblem train_problem(const ModelLayer& l);

// The layer's plan and operands. Inputs from the layer's seed, each uniform around 0: x and d_y of
// variance 1, rounded to the activations' type; every weight and bias of variance 1 / fan-in (LeCun's
// initialization: the values stay about 1 through both projections and back, so that the check's
// absolute tolerance is small beside them), rounded to its type or quantized (block formats: GGUF's
// layout, [E, n, k] blocks along k); the router f32 alike, its columns independent, so that each token's
// top-k is spread over all experts.
class TrainInstance {
 public:
  // Plans first: a layer whose shapes the library refuses (vkgmm::Error) fails before its inputs are made.
  TrainInstance(vkgmm::Context& ctx, const ModelLayer& layer);
  void record_forward(VkCommandBuffer cb) const;
  void record_backward(VkCommandBuffer cb) const;  // the saved words of the last forward
  uint32_t device_status() const;

  // What the device wrote, as floats: y [T, d], d_x [T, d], and every gradient asked for, by name.
  struct Downloaded {
    std::vector<float> y, d_x;
    std::vector<std::pair<std::string, std::vector<float>>> gradients;  // d_x included
  };
  Downloaded download() const;
  void poison_outputs() const;  // y and every gradient NaN, before the check's step

  const ModelLayer& layer;
  const vkgmm::MoeLayerProblem problem;
  // Host copies, exactly what the device reads: weights as [E, d, n_up] and [E, f, d] (block formats:
  // their dequantized values, [E, n_up, d] and [E, d, f]).
  std::vector<float> x, router_w, w_up, w_down, b_up, b_down, d_y;

 private:
  vkgmm::Context& ctx_;
  vkgmm::MoeLayerPlan plan_;
  vkgmm::MoeLayerSizes sizes_;
  vkgmm::Buffer x_, router_w_, w_up_, w_down_, b_up_, b_down_, y_, status_;
  vkgmm::Buffer d_y_, d_x_, d_router_w_, d_w_up_, d_b_up_, d_w_down_, d_b_down_;
  vkgmm::MoeLayerOperands ops_;
  vkgmm::MoeLayerGradients grads_;
};

// The check before timing (bench/train_check.cpp): the forward's y and the backward's d_x on a sample of
// tokens against vkgmm::reference (router, top-k, both projections, their backward and top-k's), and every
// gradient finite. Returns the first disagreement, or nothing; `checked` gets the tokens compared.
std::optional<std::string> check_train(const TrainInstance& inst, const TrainInstance::Downloaded& got,
                                       int64_t& checked);

}  // namespace bench
