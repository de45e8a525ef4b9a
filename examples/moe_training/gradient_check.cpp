#include "gradient_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

namespace train {
namespace {

std::vector<double> logits_of(const Shape& s, const Weights& w, const Floats& x, int64_t t) {
  std::vector<double> l(s.experts, 0.0);
  for (int64_t e = 0; e < s.experts; ++e)
    for (int64_t i = 0; i < s.d_model; ++i) l[e] += double(x[t * s.d_model + i]) * w.router_w[i * s.experts + e];
  return l;
}

double silu(double v) { return v / (1.0 + std::exp(-v)); }

}  // namespace

std::vector<int64_t> top_k_ids(const Shape& s, const Weights& w, const Floats& x, double& margin) {
  std::vector<int64_t> ids;
  margin = INFINITY;
  std::vector<int64_t> order(s.experts);
  for (int64_t t = 0; t < s.tokens; ++t) {
    const std::vector<double> l = logits_of(s, w, x, t);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return l[a] > l[b]; });
    ids.insert(ids.end(), order.begin(), order.begin() + s.top_k);
    if (s.top_k < s.experts) margin = std::min(margin, l[order[s.top_k - 1]] - l[order[s.top_k]]);
  }
  return ids;
}

double mean_loss(const Shape& s, const Weights& w, const Floats& x, const Floats& target,
                 const std::vector<int64_t>& ids) {
  const int64_t d = s.d_model, f = s.d_ff, width = 2 * f;
  std::vector<double> y(d), u(width), h(f), gate(s.top_k);
  double loss = 0;
  for (int64_t t = 0; t < s.tokens; ++t) {
    const std::vector<double> l = logits_of(s, w, x, t);
    double sum = 0;
    for (int64_t j = 0; j < s.top_k; ++j) sum += gate[j] = std::exp(l[ids[t * s.top_k + j]] - l[ids[t * s.top_k]]);
    std::fill(y.begin(), y.end(), 0.0);
    for (int64_t j = 0; j < s.top_k; ++j) {
      const int64_t e = ids[t * s.top_k + j];
      for (int64_t c = 0; c < width; ++c) {
        double acc = w.b_up[e * width + c];
        for (int64_t i = 0; i < d; ++i) acc += double(x[t * d + i]) * w.w_up[(e * d + i) * width + c];
        u[c] = acc;
      }
      for (int64_t c = 0; c < f; ++c) h[c] = silu(u[c]) * u[f + c];
      for (int64_t c = 0; c < d; ++c) {
        double acc = w.b_down[e * d + c];
        for (int64_t i = 0; i < f; ++i) acc += h[i] * w.w_down[(e * f + i) * d + c];
        y[c] += gate[j] / sum * acc;
      }
    }
    for (int64_t c = 0; c < d; ++c) loss += 0.5 * (y[c] - target[t * d + c]) * (y[c] - target[t * d + c]);
  }
  return loss / double(s.tokens);
}

bool check_step(const Shape& s, const Weights& before, const Weights& after, double lr, const Floats& x,
                const Floats& target, double device_loss, int coordinates) {
  double margin = 0;
  const std::vector<int64_t> ids = top_k_ids(s, before, x, margin);
  // f32 logits of 16 terms are within ~1e-5 of these: a gap this wide means the device chose the same.
  if (!(margin > 1e-3)) {
    std::printf("gradient check: a token's logits are %.1e from a tie, too close to know the device's "
                "routing: FAIL (another seed)\n", margin);
    return false;
  }
  const double cpu_loss = mean_loss(s, before, x, target, ids);
  bool ok = std::fabs(device_loss - cpu_loss) <= 1e-4 * cpu_loss;
  std::printf("gradient check: step 0 loss %.6f, CPU forward in double %.6f%s\n", device_loss, cpu_loss,
              ok ? "" : "  FAIL");

  struct Parameter {
    const char* name;
    Floats Weights::*values;
  };
  const Parameter parameters[] = {{"router_w", &Weights::router_w}, {"w_up", &Weights::w_up},
                                  {"b_up", &Weights::b_up},         {"w_down", &Weights::w_down},
                                  {"b_down", &Weights::b_down}};
  std::mt19937 rng(2);
  const double step = 1e-3;  // central differences of a smooth function in double: error ~step^2
  for (const Parameter& p : parameters) {
    const Floats& v0 = before.*p.values;
    const Floats& v1 = after.*p.values;
    std::uniform_int_distribution<size_t> pick(0, v0.size() - 1);
    double largest = 0, worst = 0;
    for (int c = 0; c < coordinates; ++c) {
      const size_t i = pick(rng);
      Weights moved = before;
      Floats& v = moved.*p.values;
      // The weights are floats: the difference is divided by the step actually taken (v0[i] +- step
      // rounded to float), not by the one asked for.
      v[i] = float(double(v0[i]) + step);
      const double up = mean_loss(s, moved, x, target, ids), hi = v[i];
      v[i] = float(double(v0[i]) - step);
      const double down = mean_loss(s, moved, x, target, ids), lo = v[i];
      const double want = (up - down) / (hi - lo);
      const double got = (double(v0[i]) - double(v1[i])) / lr;  // the update the example applied
      largest = std::max(largest, std::fabs(want));
      worst = std::max(worst, std::isfinite(got) ? std::fabs(got - want) : INFINITY);
    }
    // Relative to the largest gradient checked: a zero or sign-flipped gradient is off by 100% or 200%
    // of it. The floor covers the float rounding of the update itself (|v| * 2^-24 / lr).
    const bool good = largest > 1e-3 && worst <= 1e-3 * largest + 2e-6;
    std::printf("gradient check: %-8s %d coordinates, largest %.3e, worst error %.2e%s\n", p.name, coordinates,
                largest, worst, good ? "" : "  FAIL: the update is not the gradient");
    ok = ok && good;
  }
  return ok;
}

}  // namespace train
