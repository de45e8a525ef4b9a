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
  // The gated layer's (moe_layer_swiglu): up is then [experts, d_model, 2 * d_ff], columns [gate | up],
  // with a bias [experts, 2 * d_ff] (as gpt-oss's experts have).
  std::vector<float> up_bias;
};

double silu(double x);

// logits [tokens, experts] = x [tokens, d_model] @ router.
std::vector<double> router_logits(const std::vector<float>& x, const Weights& w, int64_t tokens);

// The gated layer, token by token: y[t] = sum over j of weights[t, j] * (h @ down[e]) with e = ids[t, j],
// u = x[t] @ up[e] + up_bias[e] (2 * d_ff columns) and h = silu(u[:d_ff]) * u[d_ff:] (SwiGLU).
std::vector<double> moe_layer_swiglu(const std::vector<float>& x, const Weights& w, const TopK& routing,
                                     int64_t tokens, int64_t top_k);

}  // namespace moe
