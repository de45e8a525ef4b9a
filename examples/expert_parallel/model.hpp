// The layer every rank computes a part of: one expert projection y[t] = sum over t's top-k experts e of
// weight * (x[t] @ W[e]), its data made from one seed (every rank holds the same bits), each rank's
// token slice and routing, and the single-process answer computed token by token.
#pragma once

#include <cstdint>
#include <vector>

#include "routing.hpp"  // examples/moe_layer: top-k, permutation, weighted un-permutation

namespace ep {

struct Shape {
  int64_t tokens = 128, experts = 8, top_k = 2, d_model = 128, d_out = 96;
};

struct Model {
  Shape shape;
  std::vector<float> x;       // [tokens, d_model]
  std::vector<float> router;  // [d_model, experts]
  std::vector<float> w;       // [experts, d_model, d_out]
  std::vector<float> d_y;     // [tokens, d_out]: the cotangent the layer's output receives
};

// The weights from `seed`, and step 0's inputs (draw_step).
Model make_model(const Shape& shape, uint32_t seed);
// Step `step`'s inputs x, router and d_y, drawn anew from (seed, step): every step computes another
// layer output with the same weights, so a rank that kept an earlier step's rows or ids gives a wrong
// answer. The weights stay: each rank uploaded its experts' once.
void draw_step(Model& m, uint32_t seed, int step);

// A rank's data-parallel share of the tokens, [begin, end).
struct Slice {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
Slice token_slice(int64_t tokens, int rank, int ranks);

// rows [begin, end) of a row-major matrix of `width` columns.
std::vector<float> rows_of(const std::vector<float>& m, Slice s, int64_t width);

// Router logits on the host, then top-k with the renormalised softmax (moe::route_top_k): token
// indices relative to the slice, rows sorted by expert.
moe::Routing route(const Model& m, Slice s);

// What one process computes for the whole layer: y and d_x of the slice's tokens, d_W of the experts
// [first_expert, first_expert + count), accumulated in double from every token routed there.
struct Reference {
  std::vector<double> y;    // [slice, d_out]
  std::vector<double> d_x;  // [slice, d_model]
  std::vector<double> d_w;  // [count, d_model, d_out]
};
Reference reference(const Model& m, Slice s, int64_t first_expert, int64_t count);

}  // namespace ep
