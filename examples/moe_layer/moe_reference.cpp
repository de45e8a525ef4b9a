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

std::vector<double> moe_layer_swiglu(const std::vector<float>& x, const Weights& w, const TopK& routing,
                                     int64_t tokens, int64_t top_k) {
  const int64_t width = 2 * w.d_ff;
  std::vector<double> y(tokens * w.d_model, 0.0), u(width), h(w.d_ff);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < top_k; ++j) {
      const int64_t e = routing.ids[t * top_k + j];
      const float* up = &w.up[e * w.d_model * width];
      const float* down = &w.down[e * w.d_ff * w.d_model];
      for (int64_t f = 0; f < width; ++f) {
        double s = w.up_bias[e * width + f];
        for (int64_t i = 0; i < w.d_model; ++i) s += double(x[t * w.d_model + i]) * up[i * width + f];
        u[f] = s;
      }
      for (int64_t f = 0; f < w.d_ff; ++f) h[f] = silu(u[f]) * u[w.d_ff + f];
      for (int64_t c = 0; c < w.d_model; ++c) {
        double s = 0;
        for (int64_t f = 0; f < w.d_ff; ++f) s += h[f] * down[f * w.d_model + c];
        y[t * w.d_model + c] += routing.weights[t * top_k + j] * s;
      }
    }
  return y;
}

}  // namespace moe
