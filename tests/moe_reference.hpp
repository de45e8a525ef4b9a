// MoeLayerPlan's layer in float64, written from its definition (vkgmm/moe_layer.hpp) for the tests that
// check the plan against it: weights in the element types' layouts (w_up [E_local, d, n_up], w_down
// [E_local, f, d]), whatever layout the plan read them in.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "vkgmm/moe_layer.hpp"

namespace vkgmm::test {

struct MoeWeights {
  std::vector<double> x, router_w, w_up, w_down, b_up, b_down;
};

inline double act(Activation a, double g, double u) {
  switch (a) {
    case Activation::swiglu: return g / (1 + std::exp(-g)) * u;
    case Activation::geglu: return 0.5 * g * (1 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g))) * u;
    case Activation::swiglu_oai: {
      const double gc = std::min(g, 7.0), uc = std::clamp(u, -7.0, 7.0);
      return (uc + 1) * gc / (1 + std::exp(-1.702 * gc));
    }
    case Activation::none: break;
  }
  return g;
}

// y [T, d] of the layer in float64, from the definition in vkgmm/moe_layer.hpp.
inline std::vector<double> reference_layer(const MoeLayerProblem& p, const MoeWeights& w) {
  const int64_t T = p.tokens, d = p.d_model, f = p.d_ff, E = p.num_experts, K = p.top_k;
  const int64_t n_up = gated(p.activation) ? 2 * f : f, e_local = p.local_experts < 0 ? E - p.expert_offset : p.local_experts;
  std::vector<double> y(size_t(T * d), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> logit(size_t(E), 0.0);
    for (int64_t e = 0; e < E; ++e)
      for (int64_t i = 0; i < d; ++i) logit[size_t(e)] += w.x[size_t(t * d + i)] * w.router_w[size_t(i * E + e)];
    std::vector<int64_t> order(static_cast<size_t>(E));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return logit[size_t(a)] > logit[size_t(b)]; });
    const double top = logit[size_t(order[0])];
    double all = 0, chosen = 0;
    for (int64_t e = 0; e < E; ++e) all += std::exp(logit[size_t(e)] - top);
    for (int64_t j = 0; j < K; ++j) chosen += std::exp(logit[size_t(order[size_t(j)])] - top);
    for (int64_t j = 0; j < K; ++j) {
      const int64_t e = order[size_t(j)] - p.expert_offset;
      if (e < 0 || e >= e_local) continue;
      const double weight = std::exp(logit[size_t(order[size_t(j)])] - top) / (p.renormalize ? chosen : all);
      std::vector<double> h(static_cast<size_t>(n_up), 0.0), a(static_cast<size_t>(f));
      for (int64_t c = 0; c < n_up; ++c) {
        double v = p.up_bias ? w.b_up[size_t(e * n_up + c)] : 0.0;
        for (int64_t i = 0; i < d; ++i) v += w.x[size_t(t * d + i)] * w.w_up[size_t((e * d + i) * n_up + c)];
        h[size_t(c)] = v;
      }
      for (int64_t c = 0; c < f; ++c) a[size_t(c)] = gated(p.activation) ? act(p.activation, h[size_t(c)], h[size_t(c + f)]) : h[size_t(c)];
      for (int64_t c = 0; c < d; ++c) {
        double v = p.down_bias ? w.b_down[size_t(e * d + c)] : 0.0;
        for (int64_t i = 0; i < f; ++i) v += a[size_t(i)] * w.w_down[size_t((e * f + i) * d + c)];
        y[size_t(t * d + c)] += weight * v;
      }
    }
  }
  return y;
}

}  // namespace vkgmm::test
