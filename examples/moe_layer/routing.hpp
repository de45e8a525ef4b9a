// Top-k routing and the permutation into expert-contiguous rows: the host-side glue of an MoE layer.
#pragma once

#include <cstdint>
#include <vector>

namespace moe {

// Each token goes to its top_k experts. Row i of the permuted activations is token token_of[i], weighted
// by weight_of[i] when un-permuting; rows are grouped by expert (expert 0's rows first), which is the
// layout gmm's group_sizes describe.
struct Routing {
  std::vector<int32_t> group_sizes;  // [experts]: rows per expert (may be 0)
  std::vector<int32_t> token_of;     // [tokens * top_k]
  std::vector<int32_t> expert_of;    // [tokens * top_k]
  std::vector<float> weight_of;      // [tokens * top_k]: softmax over the chosen experts' logits
};

// Each token's top_k experts, best first (ties to the lower expert index), and their weights, a softmax
// over the chosen experts' logits: ids and weights [tokens, top_k], as a router hands them to gmm's
// routing by expert ids (and as vkgmm::TopKPlan computes them on the device). Throws where top_k is not
// in [1, experts], or tokens * top_k slots would not fit the int32 ids, token indices and counts.
struct TopK {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};
TopK top_k(const std::vector<float>& logits, int64_t tokens, int64_t experts, int64_t top_k);

// The same choices as expert-contiguous rows. logits [tokens, experts], row-major.
Routing route_top_k(const std::vector<float>& logits, int64_t tokens, int64_t experts, int64_t top_k);

// rows[i] = x[token_of[i]] for x [tokens, width]: the permutation into expert-contiguous rows.
std::vector<float> permute(const Routing& r, const std::vector<float>& x, int64_t width);

// y[token_of[i]] += weight_of[i] * rows[i]: the weighted un-permutation back to token order.
std::vector<float> unpermute(const Routing& r, const std::vector<float>& rows, int64_t tokens, int64_t width);

}  // namespace moe
