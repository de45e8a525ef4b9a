// CPU reference of the MoE layer (double accumulation).
#include "moe_reference.hpp"

#include <cmath>

namespace moe {

double silu(double x) { return x / (1.0 + std::exp(-x)); }

std::vector<double> router_logits(const std::vector<float>& x, const Weights& w, int64_t tokens) {
  std::vector<double> logits(tokens * w.experts, 0.0);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t e = 0; e < w.experts; ++e)
      for (int64_t i = 0; i < w.d_model; ++i)
        logits[t * w.experts + e] += double(x[t * w.d_model + i]) * w.router[i * w.experts + e];
  return logits;
}

std::vector<double> moe_layer(const std::vector<float>& x, const Weights& w, const Routing& r, int64_t tokens) {
  std::vector<double> y(tokens * w.d_model, 0.0), h(w.d_ff);
  for (size_t row = 0; row < r.token_of.size(); ++row) {
    const int64_t t = r.token_of[row], e = r.expert_of[row];
    const float* up = &w.up[e * w.d_model * w.d_ff];
    const float* down = &w.down[e * w.d_ff * w.d_model];
    for (int64_t f = 0; f < w.d_ff; ++f) {
      double s = 0;
      for (int64_t i = 0; i < w.d_model; ++i) s += double(x[t * w.d_model + i]) * up[i * w.d_ff + f];
      h[f] = silu(s);
    }
    for (int64_t j = 0; j < w.d_model; ++j) {
      double s = 0;
      for (int64_t f = 0; f < w.d_ff; ++f) s += h[f] * down[f * w.d_model + j];
      y[t * w.d_model + j] += r.weight_of[row] * s;
    }
  }
  return y;
}

}  // namespace moe
