// The bench's seeded routings, std-only so that its peers (bench/peers/ggml_mul_mat_id.cpp) compile the
// very same draws: group sizes by distribution, and a top-k router's ids and weights.
#pragma once

#include <cstdint>
#include <vector>

// How the m rows are routed to the G groups (experts).
//   uniform: equal sizes (the remainder spread over the first groups).
//   random:  each row picks a group uniformly at random (balanced top-k routing).
//   zipf:    each row picks a group with probability ~ 1/rank^1.1 over a shuffled ranking: a few hot
//            experts, a long tail, and some experts that receive nothing (as trained routers give).
enum class Dist { uniform, random, zipf };

// Deterministic for a given (m, groups, dist, empty_groups, seed). Requires empty_groups < groups.
std::vector<int32_t> make_group_sizes(int64_t m, int64_t groups, Dist dist, int64_t empty_groups, uint32_t seed);

// A seeded top-k router over random logits, as an MoE layer's gate produces it: each expert has a fixed
// popularity (normal, sd 1) added to every token's normal logits, so loads are uneven but spread; each
// token takes its top_k distinct experts in descending logit order, weighted by a softmax over the
// selected logits (Qwen3's normalized top-k). ids and weights [T, top_k]. Requires top_k <= experts.
void draw_router(int64_t tokens, int64_t experts, int64_t top_k, uint32_t seed, std::vector<int32_t>& ids,
                 std::vector<float>& weights);
