#include "model.hpp"

#include <cmath>
#include <random>

#include "moe_reference.hpp"  // examples/moe_layer: router_logits

namespace ep {

namespace {
// Uniform in [-1, 1) scaled by 1 / sqrt(fan_in), so that every product stays O(1), as a trained layer's would.
void fill(std::mt19937& rng, std::vector<float>& v, int64_t count, double fan_in) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  v.resize(count);
  for (float& e : v) e = float(u(rng) / std::sqrt(fan_in));
}
}  // namespace

Model make_model(const Shape& shape, uint32_t seed) {
  Model m;
  m.shape = shape;
  std::mt19937 rng(seed);
  fill(rng, m.w, shape.experts * shape.d_model * shape.d_out, double(shape.d_model));
  draw_step(m, seed, 0);
  return m;
}

void draw_step(Model& m, uint32_t seed, int step) {
  std::seed_seq seq{seed, uint32_t(step) + 1u};
  std::mt19937 rng(seq);
  fill(rng, m.x, m.shape.tokens * m.shape.d_model, 1);
  fill(rng, m.router, m.shape.d_model * m.shape.experts, 1);  // wide logits: decisive, varied routing
  fill(rng, m.d_y, m.shape.tokens * m.shape.d_out, 1);
}

Slice token_slice(int64_t tokens, int rank, int ranks) { return {tokens * rank / ranks, tokens * (rank + 1) / ranks}; }

std::vector<float> rows_of(const std::vector<float>& m, Slice s, int64_t width) {
  return std::vector<float>(m.begin() + s.begin * width, m.begin() + s.end * width);
}

moe::Routing route(const Model& m, Slice s) {
  moe::Weights router;
  router.d_model = m.shape.d_model;
  router.experts = m.shape.experts;
  router.router = m.router;
  const std::vector<double> logits = moe::router_logits(rows_of(m.x, s, m.shape.d_model), router, s.size());
  return moe::route_top_k(std::vector<float>(logits.begin(), logits.end()), s.size(), m.shape.experts, m.shape.top_k);
}

Reference reference(const Model& m, Slice s, int64_t first_expert, int64_t count) {
  const int64_t dm = m.shape.d_model, dn = m.shape.d_out;
  Reference ref;
  ref.y.assign(s.size() * dn, 0.0);
  ref.d_x.assign(s.size() * dm, 0.0);
  ref.d_w.assign(count * dm * dn, 0.0);
  // The whole batch's routing, token by token: the same choices every rank's slice makes.
  const moe::Routing all = route(m, {0, m.shape.tokens});
  for (size_t i = 0; i < all.token_of.size(); ++i) {
    const int64_t t = all.token_of[i], e = all.expert_of[i];
    const double g = all.weight_of[i];
    const float* x = &m.x[t * dm];
    const float* d_y = &m.d_y[t * dn];
    const float* w = &m.w[e * dm * dn];
    if (t >= s.begin && t < s.end) {
      double* y = &ref.y[(t - s.begin) * dn];
      double* d_x = &ref.d_x[(t - s.begin) * dm];
      for (int64_t j = 0; j < dn; ++j) {
        double acc = 0;
        for (int64_t i2 = 0; i2 < dm; ++i2) acc += double(x[i2]) * w[i2 * dn + j];
        y[j] += g * acc;
      }
      for (int64_t i2 = 0; i2 < dm; ++i2) {
        double acc = 0;
        for (int64_t j = 0; j < dn; ++j) acc += double(d_y[j]) * w[i2 * dn + j];
        d_x[i2] += g * acc;
      }
    }
    if (e >= first_expert && e < first_expert + count) {
      double* d_w = &ref.d_w[(e - first_expert) * dm * dn];
      for (int64_t i2 = 0; i2 < dm; ++i2)
        for (int64_t j = 0; j < dn; ++j) d_w[i2 * dn + j] += double(x[i2]) * g * d_y[j];
    }
  }
  return ref;
}

}  // namespace ep
