// One rank's experts on its own vkgmm Context: the forward gmm and its backward (d_x through gmm with the
// weights transposed, d_W through tgmm) over the rows the all-to-all brought, routed by their expert ids
// in the order they arrived (the gmm gathers them by expert on the device).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <vkgmm/vkgmm.hpp>

namespace ep {

struct ShardShape {
  int64_t capacity = 0;          // rows a rank can receive in one step (every slot of every token: no dropping)
  int64_t d_model = 0, d_out = 0;
  int64_t experts = 0;           // E, all ranks' experts
  int64_t first_expert = 0;      // this rank's window: [first_expert, first_expert + experts_per_rank)
  int64_t experts_per_rank = 0;
};

// Seconds spent on the device (recording, submitting and waiting: vkgmm's part of a step) and in copies
// between host vectors and vkgmm's buffers (the staging MPI needs without GPU-aware transport).
struct ShardTime {
  double vkgmm = 0, staging = 0;
};

class ExpertShard {
 public:
  // weights [experts_per_rank, d_model, d_out], f32: this rank's experts only.
  ExpertShard(vkgmm::Context& ctx, const ShardShape& shape, const std::vector<float>& weights);

  // rows [R, d_model] in any order, experts [R] each row's expert (one of this rank's) -> [R, d_out].
  // restage false: the rows and ids are not copied to the device, whose buffers keep an earlier
  // forward's (the example's check of itself: Fault::stale_rows).
  std::vector<float> forward(const std::vector<float>& rows, const std::vector<int32_t>& experts, ShardTime& t,
                             bool restage = true);
  // d_out [R, d_out] for the rows of the last forward, in the same order -> d_x rows [R, d_model]; the
  // shard's weight gradient is d_weights() afterwards.
  std::vector<float> backward(const std::vector<float>& d_out, ShardTime& t);
  // [experts_per_rank, d_model, d_out] of the last backward.
  std::vector<float> d_weights(ShardTime& t) const;

 private:
  void run(const std::function<void(VkCommandBuffer)>& record, ShardTime& t);

  vkgmm::Context& ctx_;
  ShardShape shape_;
  int64_t rows_ = 0;  // R of the last forward
  // Made once per shape: the rows' expert ids live in a device buffer written every step (no plan per step),
  // -1 past the rows received.
  vkgmm::GmmPlan forward_;
  vkgmm::GmmBackwardPlan backward_;
  vkgmm::Buffer weights_, x_rows_, y_rows_, ids_, status_, d_y_rows_, d_x_rows_, d_weights_;
  vkgmm::Buffer forward_work_, backward_work_;
};

}  // namespace ep
