// The MoE layer computed token by token on the CPU in double: what the grouped version must match.
#pragma once

#include <cstdint>
#include <vector>

#include "routing.hpp"

namespace moe {

struct Weights {
  int64_t d_model = 0, d_ff = 0, experts = 0;
  std::vector<float> router;  // [d_model, experts]
  std::vector<float> up;      // [experts, d_model, d_ff]
  std::vector<float> down;    // [experts, d_ff, d_model]
};

double silu(double x);

// logits [tokens, experts] = x [tokens, d_model] @ router.
std::vector<double> router_logits(const std::vector<float>& x, const Weights& w, int64_t tokens);

// y[t] = sum over t's chosen experts e of weight * (silu(x[t] @ up[e]) @ down[e]), with the choices of r
// but without any permutation: each token's rows are computed from x directly.
std::vector<double> moe_layer(const std::vector<float>& x, const Weights& w, const Routing& r, int64_t tokens);

}  // namespace moe
