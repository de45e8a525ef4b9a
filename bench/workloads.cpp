// Presets and routing distributions. Every random choice comes from a seeded std::mt19937 so that a
// workload is the same on every run and every machine (its sizes are printed in --json).
#include "workloads.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace bench {

const char* op_name(Op op) {
  switch (op) {
    case Op::gmm: return "gmm";
    case Op::tgmm: return "tgmm";
    case Op::backward: return "backward";
  }
  return "?";
}

bool parse_op(const std::string& s, Op& op) {
  for (Op o : {Op::gmm, Op::tgmm, Op::backward})
    if (s == op_name(o)) return op = o, true;
  return false;
}

const char* dist_name(Dist d) {
  switch (d) {
    case Dist::uniform: return "uniform";
    case Dist::random: return "random";
    case Dist::zipf: return "zipf";
  }
  return "?";
}

bool parse_dist(const std::string& s, Dist& d) {
  for (Dist x : {Dist::uniform, Dist::random, Dist::zipf})
    if (s == dist_name(x)) return d = x, true;
  return false;
}

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names = {"moe-prefill", "moe-fine", "decode", "moe-grad"};
  return names;
}

bool make_preset(const std::string& name, Workload& w) {
  w = Workload{};
  w.name = name;
  if (name == "moe-prefill") {
    // A prefill batch through an 8-expert MoE layer (Mixtral-like routing, scaled to a CPU driver).
    w.m = 4096, w.k = 1024, w.n = 1024, w.groups = 8, w.dist = Dist::random;
  } else if (name == "moe-fine") {
    // Fine-grained experts (DeepSeek-like): many small experts, skewed routing, 8 experts unused.
    w.m = 4096, w.k = 512, w.n = 512, w.groups = 64, w.dist = Dist::zipf, w.empty_groups = 8;
  } else if (name == "decode") {
    // One decode step: 16 tokens over 8 experts, so groups are tiny and some are empty.
    w.m = 16, w.k = 1024, w.n = 1024, w.groups = 8, w.dist = Dist::random;
  } else if (name == "moe-grad") {
    // The backward of moe-prefill: d_lhs (gmm) and d_rhs (tgmm) together.
    make_preset("moe-prefill", w);
    w.name = name;
    w.op = Op::backward;
  } else {
    return false;
  }
  w.group_sizes = make_group_sizes(w.m, w.groups, w.dist, w.empty_groups, w.seed);
  return true;
}

std::vector<int32_t> make_group_sizes(int64_t m, int64_t groups, Dist dist, int64_t empty_groups, uint32_t seed) {
  std::mt19937 rng(seed);
  // Which groups may receive rows: all but `empty_groups` of them, the empty ones chosen at random.
  std::vector<int64_t> order(static_cast<size_t>(groups));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<int64_t> live(order.begin() + empty_groups, order.end());
  std::sort(live.begin(), live.end());

  std::vector<int32_t> sizes(static_cast<size_t>(groups), 0);
  if (dist == Dist::uniform) {
    const int64_t L = static_cast<int64_t>(live.size());
    for (int64_t i = 0; i < L; ++i) sizes[live[i]] = static_cast<int32_t>(m / L + (i < m % L ? 1 : 0));
    return sizes;
  }
  std::vector<double> weight(live.size(), 1.0);
  if (dist == Dist::zipf) {
    // Ranks are shuffled over the live groups so the hot experts are not simply the first ones.
    std::vector<size_t> rank(live.size());
    std::iota(rank.begin(), rank.end(), 0);
    std::shuffle(rank.begin(), rank.end(), rng);
    for (size_t i = 0; i < live.size(); ++i) weight[i] = 1.0 / std::pow(double(rank[i] + 1), 1.1);
  }
  std::discrete_distribution<size_t> pick(weight.begin(), weight.end());
  for (int64_t r = 0; r < m; ++r) ++sizes[live[pick(rng)]];
  return sizes;
}

namespace {
double routed_rows(const Workload& w) {
  return std::accumulate(w.group_sizes.begin(), w.group_sizes.end(), 0.0);
}
}  // namespace

double flops(const Workload& w) {
  const double one = 2.0 * routed_rows(w) * double(w.k) * double(w.n);
  return w.op == Op::backward ? 2 * one : one;
}

double bytes(const Workload& w) {
  const double e = double(vkgmm::dtype_size(w.dtype));
  const double mk = double(w.m) * w.k, mn = double(w.m) * w.n, gkn = double(w.groups) * w.k * w.n;
  switch (w.op) {
    case Op::gmm: return e * (mk + gkn + mn);          // lhs, rhs -> out
    case Op::tgmm: return e * (mk + mn + gkn);         // lhs, rhs -> out[G]
    case Op::backward: return e * (mn + gkn + mk       // d_out, rhs -> d_lhs
                                   + mk + mn + gkn);   // lhs, d_out -> d_rhs
  }
  return 0;
}

}  // namespace bench
