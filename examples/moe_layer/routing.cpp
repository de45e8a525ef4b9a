// Top-k routing, permutation and un-permutation on the host. An engine would run these as its own
// kernels; they are plain loops here because the example is about the grouped matmuls between them.
#include "routing.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>

namespace moe {

namespace {

// The routing's ids, token indices and per-expert counts are int32: refused where they would not fit,
// rather than wrapped.
void check_sizes(const std::vector<float>& logits, int64_t tokens, int64_t experts, int64_t top_k) {
  if (tokens < 0 || experts < 1 || top_k < 1 || top_k > experts)
    throw std::invalid_argument("routing: " + std::to_string(tokens) + " tokens, top-" + std::to_string(top_k) +
                                " of " + std::to_string(experts) + " experts: need 1 <= top_k <= experts");
  if (experts > INT32_MAX || tokens > INT32_MAX / top_k)
    throw std::length_error("routing: " + std::to_string(tokens) + " tokens * top-" + std::to_string(top_k) +
                            " slots or " + std::to_string(experts) + " experts: more than int32 ids and counts hold");
  if (int64_t(logits.size()) / experts < tokens)
    throw std::invalid_argument("routing: " + std::to_string(logits.size()) + " logits for " +
                                std::to_string(tokens) + " tokens of " + std::to_string(experts) + " experts");
}

}  // namespace

TopK top_k(const std::vector<float>& logits, int64_t tokens, int64_t experts, int64_t top_k) {
  check_sizes(logits, tokens, experts, top_k);
  TopK r;
  std::vector<int32_t> order(experts);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* l = &logits[t * experts];
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[a] > l[b]; });
    // Softmax restricted to the chosen experts (Mixtral's renormalised top-k gate).
    double sum = 0;
    for (int64_t j = 0; j < top_k; ++j) sum += std::exp(double(l[order[j]]) - l[order[0]]);
    for (int64_t j = 0; j < top_k; ++j) {
      r.ids.push_back(order[j]);
      r.weights.push_back(float(std::exp(double(l[order[j]]) - l[order[0]]) / sum));
    }
  }
  return r;
}

Routing route_top_k(const std::vector<float>& logits, int64_t tokens, int64_t experts, int64_t top_k) {
  struct Choice {
    int32_t token, expert;
    float weight;
  };
  const TopK chosen = moe::top_k(logits, tokens, experts, top_k);  // which checks the sizes
  std::vector<Choice> choices;
  choices.reserve(tokens * top_k);
  for (size_t i = 0; i < chosen.ids.size(); ++i)
    choices.push_back({int32_t(i / top_k), chosen.ids[i], chosen.weights[i]});
  // Expert-contiguous rows: a stable sort by expert keeps each expert's tokens in token order.
  std::stable_sort(choices.begin(), choices.end(), [](const Choice& a, const Choice& b) { return a.expert < b.expert; });
  Routing r;
  r.group_sizes.assign(experts, 0);
  for (const Choice& c : choices) {
    ++r.group_sizes[c.expert];
    r.token_of.push_back(c.token);
    r.expert_of.push_back(c.expert);
    r.weight_of.push_back(c.weight);
  }
  return r;
}

std::vector<float> permute(const Routing& r, const std::vector<float>& x, int64_t width) {
  std::vector<float> rows(r.token_of.size() * width);
  for (size_t i = 0; i < r.token_of.size(); ++i)
    std::copy_n(&x[r.token_of[i] * width], width, &rows[i * width]);
  return rows;
}

std::vector<float> unpermute(const Routing& r, const std::vector<float>& rows, int64_t tokens, int64_t width) {
  std::vector<float> y(tokens * width, 0.f);
  for (size_t i = 0; i < r.token_of.size(); ++i)
    for (int64_t j = 0; j < width; ++j) y[r.token_of[i] * width + j] += r.weight_of[i] * rows[i * width + j];
  return y;
}

}  // namespace moe
