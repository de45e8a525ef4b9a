#include "routing_draws.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

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

void draw_router(int64_t tokens, int64_t experts, int64_t top_k, uint32_t seed, std::vector<int32_t>& ids,
                 std::vector<float>& weights) {
  const int64_t T = tokens, E = experts, K = top_k;
  std::mt19937 rng(seed * 2654435761u + 12345u);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> popularity(static_cast<size_t>(E));
  for (double& p : popularity) p = normal(rng);
  ids.assign(size_t(T * K), 0);
  weights.assign(size_t(T * K), 0.0f);
  std::vector<double> logit(static_cast<size_t>(E));
  std::vector<int32_t> order(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t e = 0; e < E; ++e) logit[size_t(e)] = popularity[size_t(e)] + normal(rng);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + K, order.end(),
                      [&](int32_t a, int32_t b) { return logit[size_t(a)] > logit[size_t(b)]; });
    double total = 0;
    for (int64_t j = 0; j < K; ++j) total += std::exp(logit[size_t(order[size_t(j)])] - logit[size_t(order[0])]);
    for (int64_t j = 0; j < K; ++j) {
      const int32_t e = order[size_t(j)];
      ids[size_t(t * K + j)] = e;
      weights[size_t(t * K + j)] = float(std::exp(logit[size_t(e)] - logit[size_t(order[0])]) / total);
    }
  }
}
