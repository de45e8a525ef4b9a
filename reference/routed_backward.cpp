// The routed gmm's backward in float64: the oracle of the routed GmmBackwardPlan's tests, and the forward
// as a float64 scalar for finite differences of it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "activations.hpp"
#include "vkgmm/reference.hpp"

namespace vkgmm::reference {

namespace {

using act::gated_value;
using act::gelu_tanh;
using act::sigmoid;

// d activate / d gate, d activate / d up. The clamps pass no gradient where they hold the value; a NaN
// input's own derivative is NaN.
std::pair<double, double> derivatives(Activation a, double g, double u) {
  switch (a) {
    case Activation::swiglu: {
      const double s = sigmoid(g);
      return {u * (s + g * s * (1.0 - s)), g * s};
    }
    case Activation::swiglu_oai: {
      const double gc = std::min(g, 7.0), uc = std::clamp(u, -7.0, 7.0), s = sigmoid(1.702 * gc);
      return {g < 7.0 ? (uc + 1.0) * (s + 1.702 * gc * s * (1.0 - s)) : std::isnan(g) ? g : 0.0,
              std::abs(u) < 7.0 ? gc * s : std::isnan(u) ? u : 0.0};
    }
    case Activation::geglu: {
      // Saturated tanh: its term is 0, also at an infinite gate (0 * inf), as the shader takes it.
      const double c = 0.7978845608028654, t = std::tanh(c * (g + 0.044715 * g * g * g)), sech2 = 1.0 - t * t;
      const double d = 0.5 * (1.0 + t) + (sech2 == 0.0 ? 0.0 : 0.5 * g * sech2 * c * (1.0 + 3.0 * 0.044715 * g * g));
      return {u * d, gelu_tanh(g)};
    }
    case Activation::none: break;
  }
  return {1.0, 0.0};
}

struct Shape {
  int64_t T, top_k, slots, k, n, n_out, e_local;
  bool per_slot, combine, gated_act;
  explicit Shape(const GmmProblem& p)
      : T(p.m), top_k(p.routing.top_k), slots(p.m * p.routing.top_k), k(p.k), n(p.n),
        n_out(gated(p.epilogue.activation) ? p.n / 2 : p.n), e_local(p.num_rhs_groups),
        per_slot(p.routing.lhs_per_slot), combine(p.routing.combine), gated_act(gated(p.epilogue.activation)) {}
};

// Slot s's local expert, or -1 (as gmm_routed's).
int64_t local_expert(const GmmProblem& p, const std::vector<int32_t>& ids, int64_t s) {
  const int64_t id = ids[size_t(s)];
  const bool in = id >= p.group_offset && id < p.group_offset + p.num_rhs_groups &&
                  (p.routing.num_experts <= 0 || id < p.routing.num_experts);
  return in ? id - p.group_offset : -1;
}

size_t w_index(const GmmProblem& p, const Shape& sh, int64_t e, int64_t i, int64_t c) {
  return size_t(p.transpose_rhs ? (e * sh.n + c) * sh.k + i : (e * sh.k + i) * sh.n + c);
}

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// The slot's product + bias, h [n].
std::vector<double> product(const GmmProblem& p, const Shape& sh, int64_t s, int64_t e, const std::vector<double>& lhs,
                            const std::vector<double>& rhs, const std::vector<double>& bias) {
  const size_t a = size_t((sh.per_slot ? s : s / sh.top_k) * sh.k);
  std::vector<double> h(size_t(sh.n), 0.0);
  for (int64_t c = 0; c < sh.n; ++c) {
    double v = p.epilogue.bias ? bias[size_t(e * sh.n + c)] : 0.0;
    for (int64_t i = 0; i < sh.k; ++i) v += lhs[a + size_t(i)] * rhs[w_index(p, sh, e, i, c)];
    h[size_t(c)] = v;
  }
  return h;
}

double y_of(const GmmProblem& p, const Shape& sh, const std::vector<double>& h, int64_t c) {
  return sh.gated_act ? gated_value(p.epilogue.activation, h[size_t(c)], h[size_t(c + sh.n_out)]) : h[size_t(c)];
}

}  // namespace

RoutedGradients gmm_routed_backward(const GmmProblem& p, const RoutedInputs& in, const std::vector<float>& d_out) {
  const Shape sh(p);
  const std::vector<double> lhs = widen(in.lhs), rhs = widen(in.rhs), bias = widen(in.bias);
  RoutedGradients g;
  g.d_lhs.assign(in.lhs.size(), 0.0);
  g.d_rhs.assign(in.rhs.size(), 0.0);
  if (p.epilogue.bias) g.d_bias.assign(size_t(sh.e_local * sh.n), 0.0);
  if (sh.combine) g.d_weights.assign(size_t(sh.slots), 0.0);
  std::vector<double> dh(size_t(sh.n));
  for (int64_t s = 0; s < sh.slots; ++s) {
    const int64_t e = local_expert(p, in.ids, s);
    if (e < 0) continue;
    const int64_t t = s / sh.top_k;
    const std::vector<double> h = product(p, sh, s, e, lhs, rhs, bias);
    const double w = sh.combine ? double(in.weights[size_t(s)]) : 1.0;
    const size_t dy_row = size_t((sh.combine ? t : s) * sh.n_out);
    double dot = 0.0;
    for (int64_t c = 0; c < sh.n_out; ++c) {
      const double d = d_out[dy_row + size_t(c)];
      dot += d * y_of(p, sh, h, c);
      if (sh.gated_act) {
        const auto [dg, du] = derivatives(p.epilogue.activation, h[size_t(c)], h[size_t(c + sh.n_out)]);
        dh[size_t(c)] = w * d * dg;
        dh[size_t(c + sh.n_out)] = w * d * du;
      } else {
        dh[size_t(c)] = w * d;
      }
    }
    if (sh.combine) g.d_weights[size_t(s)] = dot;
    const size_t a = size_t((sh.per_slot ? s : t) * sh.k);
    for (int64_t i = 0; i < sh.k; ++i) {
      double da = 0.0;
      for (int64_t c = 0; c < sh.n; ++c) {
        const size_t wi = w_index(p, sh, e, i, c);
        da += dh[size_t(c)] * rhs[wi];
        g.d_rhs[wi] += lhs[a + size_t(i)] * dh[size_t(c)];
      }
      g.d_lhs[a + size_t(i)] += da;
    }
    if (p.epilogue.bias)
      for (int64_t c = 0; c < sh.n; ++c) g.d_bias[size_t(e * sh.n + c)] += dh[size_t(c)];
  }
  return g;
}

double gmm_routed_dot(const GmmProblem& p, const RoutedInputs& in, const std::vector<double>& lhs,
                      const std::vector<double>& rhs, const std::vector<double>& weights,
                      const std::vector<double>& bias, const std::vector<float>& d_out) {
  const Shape sh(p);
  double total = 0.0;
  for (int64_t s = 0; s < sh.slots; ++s) {
    const int64_t e = local_expert(p, in.ids, s);
    if (e < 0) continue;
    const std::vector<double> h = product(p, sh, s, e, lhs, rhs, bias);
    const double w = sh.combine ? weights[size_t(s)] : 1.0;
    const size_t dy_row = size_t((sh.combine ? s / sh.top_k : s) * sh.n_out);
    for (int64_t c = 0; c < sh.n_out; ++c) total += double(d_out[dy_row + size_t(c)]) * w * y_of(p, sh, h, c);
  }
  return total;
}

}  // namespace vkgmm::reference
