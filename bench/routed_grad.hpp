// A routed workload whose op is the backward (moe-grad-ids): vkgmm::GmmBackwardPlan on a forward routed by
// expert ids, what it is timed beside (that forward, and the sorted path's backward on the same slots),
// and the check of its gradients on a sample against vkgmm::reference::gmm_routed_backward.
#pragma once

#include <string>
#include <vector>

#include "routed.hpp"

namespace bench {

// The forward is RoutedInstance's, combined, its experts in one window; it must have no bias, no
// activation and lhs [T, k] (what moe-grad-ids runs; std::invalid_argument otherwise). d_out is f32
// [T, n] uniform in [-1, 1), seeded. The gradients: d_lhs [T, k] and d_rhs [E, k, n] of the workload's
// dtype, d_weights f32 [T, top_k]. The forward saves its pre-activation, and the routed backward reads it
// (as a training step's does: no product recomputed), so the forward must have run before the backward.
// The sorted path's backward (the peer): the slots in expert order on the host (expert_order), each
// slot's lhs row its token's and its d_out row its token's times the slot's routing weight, as an unrouted
// GmmBackwardPlan with host group sizes (moe-grad's call), d_out f32.
class RoutedGradInstance {
 public:
  // Plans (built once) and inputs.
  RoutedGradInstance(vkgmm::Context& ctx, const Workload& w, const vkgmm::TilingChoice& tiling);
  std::string tiling_text() const;
  std::string sorted_tiling_text() const;
  void record(VkCommandBuffer cb) const;         // the routed backward
  void record_sorted(VkCommandBuffer cb) const;  // the sorted path's backward
  uint32_t device_status() const;                // the routed backward's
  std::vector<Output> download() const;          // d_lhs [T, k], d_rhs [E, k, n], d_weights [T, top_k]
  // d_lhs per slot [T, top_k, k] (the sorted rows put back in slot order) and d_rhs [E, k, n].
  std::vector<Output> download_sorted() const;
  void poison_outputs() const;  // every gradient of both backwards NaN, before a check's call

  RoutedInstance forward;    // lhs, rhs, ids, routing weights, and the forward's plan (combined)
  std::vector<float> d_out;  // [T, n]

 private:
  std::vector<int32_t> order_;  // position in expert order -> slot
  vkgmm::Buffer d_out_, d_lhs_, d_rhs_, d_weights_, status_;
  vkgmm::Buffer sorted_lhs_, sorted_d_out_, sorted_d_lhs_, sorted_d_rhs_;
  vkgmm::GmmBackwardPlan backward_, sorted_;
  vkgmm::GmmBackwardOperands ops_, sorted_ops_;
};

// The check's sample: tokens spread over T (a token's out row, d_lhs row and d_weights depend on it
// alone) and experts spread over the selected ones (an expert's d_rhs on its own slots alone), so that
// the check costs about the same at any T and E.
struct GradSample {
  std::vector<int64_t> tokens;
  std::vector<int32_t> experts;
};

// vkgmm::reference on the sample, float64 rounded to float: `forward` {"out"} rows of gmm_routed's
// combined output, `backward` {"d_lhs", "d_rhs", "d_weights"} of gmm_routed_backward, in download()'s
// order, and `sorted` {"d_lhs" per slot, "d_rhs"} in download_sorted()'s; on every core.
struct GradReference {
  GradSample sample;
  std::vector<Output> forward, backward, sorted;
};
GradReference grad_reference(const RoutedGradInstance& inst);

// The sample's part of a device result: of d_rhs the sampled experts' [k, n] slabs, of every other
// output (rows per token, or a token's slots' rows) the sampled tokens' rows.
std::vector<Output> on_sample(const GradSample& s, const Workload& w, std::vector<Output> full);

}  // namespace bench
