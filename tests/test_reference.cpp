// The oracle tested on its own: hand-computed gmm/tgmm results, gmm's epilogue and routing by expert ids
// (by hand, and routed == grouped gmm on sorted rows), layout equivalences, the backward against finite
// differences of the forward, and the f16/bf16 conversions it rounds with.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "vkgmm/convert.hpp"
#include "vkgmm/reference.hpp"
#include "vkgmm/types.hpp"

namespace {

using vkgmm::DType;
using V = std::vector<float>;

vkgmm::GmmProblem gmm_problem(int64_t m, int64_t k, int64_t n, std::vector<int32_t> sizes) {
  vkgmm::GmmProblem p;
  p.m = m;
  p.k = k;
  p.n = n;
  p.group_sizes = std::move(sizes);
  return p;
}

vkgmm::TgmmProblem tgmm_problem(int64_t m, int64_t k, int64_t n, std::vector<int32_t> sizes) {
  vkgmm::TgmmProblem p;
  p.m = m;
  p.k = k;
  p.n = n;
  p.group_sizes = std::move(sizes);
  return p;
}

// Random values that are multiples of 2^-10 in [-1, 1]: sums of a few products are then exact in f32,
// and adding a finite-difference step of 2^-6 is exact too.
V random_values(std::mt19937& rng, size_t count) {
  std::uniform_int_distribution<int> q(-1024, 1024);
  V v(count);
  for (auto& x : v) x = static_cast<float>(q(rng)) / 1024.0f;
  return v;
}

// --- gmm ------------------------------------------------------------------------------------------------

TEST(ReferenceGmm, TwoGroups) {
  // Row 0 is group 0 (identity), rows 1-2 are group 1.
  auto p = gmm_problem(3, 2, 2, {1, 2});
  const V lhs = {1, 2, 3, 4, 5, 6};
  const V rhs = {1, 0, 0, 1,   // group 0 [k,n]
                 1, 1, 2, 0};  // group 1
  // [3,4] @ [[1,1],[2,0]] = [11,3]; [5,6] @ ... = [17,5].
  EXPECT_EQ(vkgmm::reference::gmm(p, lhs, rhs), (V{1, 2, 11, 3, 17, 5}));
}

TEST(ReferenceGmm, TransposeRhsReadsNByK) {
  // k != n so a swapped index would read the wrong element or run off the end.
  auto p = gmm_problem(2, 3, 2, {2});
  const V lhs = {1, 2, 3, 4, 5, 6};
  const V rhs_kn = {1, 0, 0, 1, 1, 1};  // [3,2]
  const V rhs_nk = {1, 0, 1, 0, 1, 1};  // the same matrix stored [2,3]
  const V want = {4, 5, 10, 11};
  EXPECT_EQ(vkgmm::reference::gmm(p, lhs, rhs_kn), want);
  p.transpose_rhs = true;
  EXPECT_EQ(vkgmm::reference::gmm(p, lhs, rhs_nk), want);
}

TEST(ReferenceGmm, GroupOffsetWindowAndExistingOut) {
  // Groups of one row each; row 3 is past sum(group_sizes). rhs holds only group 1.
  auto p = gmm_problem(4, 1, 1, {1, 1, 1});
  p.group_offset = 1;
  p.num_rhs_groups = 1;
  const V lhs = {2, 3, 5, 7};
  // Without existing_out every row outside group 1 is 0.
  EXPECT_EQ(vkgmm::reference::gmm(p, lhs, {10}), (V{0, 30, 0, 0}));
  // With it, those rows keep existing_out and the active row is overwritten, not added to.
  EXPECT_EQ(vkgmm::reference::gmm(p, lhs, {10}, {-1, -2, -3, -4}), (V{-1, 30, -3, -4}));
  // num_rhs_groups = -1 means G - group_offset = 2 groups: rhs[1] serves group 2.
  p.num_rhs_groups = -1;
  EXPECT_EQ(vkgmm::reference::gmm(p, lhs, {10, 100}, {-1, -2, -3, -4}), (V{-1, 30, 500, -4}));
}

TEST(ReferenceGmm, NoRows) {
  auto p = gmm_problem(0, 3, 2, {0, 0});
  EXPECT_TRUE(vkgmm::reference::gmm(p, {}, V(12, 1.0f)).empty());
}

TEST(ReferenceGmm, AccumulatesInDoubleAndRoundsOnce) {
  // Summed in f32 in this order, 2^24 + 1 - 2^24 would lose the 1.
  auto p = gmm_problem(1, 3, 1, {1});
  EXPECT_EQ(vkgmm::reference::gmm(p, {1, 1, 1}, {16777216.0f, 1.0f, -16777216.0f}), (V{1}));
  // 1 + 3 * 2^-11 is a tie in f16 between 1 + 2^-10 (odd) and 1 + 2^-9 (even): the sum is rounded, once.
  p = gmm_problem(1, 2, 1, {1});
  p.out_type = DType::f16;
  EXPECT_EQ(vkgmm::reference::gmm(p, {1, 3}, {1, 1.0f / 2048}), (V{1.0f + 1.0f / 512}));
  // Rows outside the groups take existing_out as stored in the out type.
  p = gmm_problem(2, 1, 1, {1});
  p.out_type = DType::bf16;
  EXPECT_EQ(vkgmm::reference::gmm(p, {1, 1}, {2}, {0, 1.0f + 1.0f / 256})[1], 1.0f);
}

// --- tgmm -----------------------------------------------------------------------------------------------

TEST(ReferenceTgmm, EmptyGroupAndExistingOut) {
  // Rows 0-1 are group 0, group 1 is empty, row 2 is group 2.
  auto p = tgmm_problem(3, 2, 1, {2, 0, 1});
  const V lhs = {1, 2, 3,   // [k=2, m=3]
                 4, 5, 6};
  const V rhs = {1, 10, 100};  // [m=3, n=1]
  EXPECT_EQ(vkgmm::reference::tgmm(p, lhs, rhs), (V{21, 54, 0, 0, 300, 600}));
  // tgmm adds existing_out; the empty group is left with it.
  EXPECT_EQ(vkgmm::reference::tgmm(p, lhs, rhs, {1, 1, 2, 2, 3, 3}), (V{22, 55, 2, 2, 303, 603}));
}

TEST(ReferenceTgmm, GroupOffsetAndNumActualGroups) {
  auto p = tgmm_problem(3, 2, 1, {2, 0, 1});
  const V lhs = {1, 2, 3, 4, 5, 6};
  const V rhs = {1, 10, 100};
  p.group_offset = 1;  // num_actual_groups = -1: groups 1 and 2
  EXPECT_EQ(vkgmm::reference::tgmm(p, lhs, rhs), (V{0, 0, 300, 600}));
  p.num_actual_groups = 1;  // group 1 alone
  EXPECT_EQ(vkgmm::reference::tgmm(p, lhs, rhs, {7, 8}), (V{7, 8}));
  p.group_offset = 0;
  p.num_actual_groups = 1;
  EXPECT_EQ(vkgmm::reference::tgmm(p, lhs, rhs), (V{21, 54}));
}

TEST(ReferenceTgmm, LhsMkAndOutNkAreTransposes) {
  std::mt19937 rng(11);
  const int64_t m = 7, k = 3, n = 5;
  auto p = tgmm_problem(m, k, n, {3, 0, 2, 1});  // row 6 belongs to no group
  const V lhs_km = random_values(rng, k * m);
  const V rhs = random_values(rng, m * n);
  const V existing_kn = random_values(rng, 4 * k * n);

  V lhs_mk(lhs_km.size());
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < k; ++c) lhs_mk[r * k + c] = lhs_km[c * m + r];
  // Per group [k,n] -> [n,k].
  auto to_nk = [&](const V& kn) {
    V nk(kn.size());
    for (size_t g = 0; g < kn.size() / (k * n); ++g)
      for (int64_t a = 0; a < k; ++a)
        for (int64_t b = 0; b < n; ++b) nk[g * k * n + b * k + a] = kn[g * k * n + a * n + b];
    return nk;
  };

  const V base = vkgmm::reference::tgmm(p, lhs_km, rhs, existing_kn);
  // Spot-check one entry by hand so the equivalences are not vacuous: group 2 is rows 3-4.
  const double want = existing_kn[2 * k * n + 1 * n + 4] + double(lhs_km[1 * m + 3]) * rhs[3 * n + 4] +
                      double(lhs_km[1 * m + 4]) * rhs[4 * n + 4];
  EXPECT_FLOAT_EQ(base[2 * k * n + 1 * n + 4], static_cast<float>(want));

  p.lhs_mk = true;
  EXPECT_EQ(vkgmm::reference::tgmm(p, lhs_mk, rhs, existing_kn), base);
  p.out_nk = true;  // existing_out shares out's layout
  EXPECT_EQ(vkgmm::reference::tgmm(p, lhs_mk, rhs, to_nk(existing_kn)), to_nk(base));
  p.lhs_mk = false;
  EXPECT_EQ(vkgmm::reference::tgmm(p, lhs_km, rhs, to_nk(existing_kn)), to_nk(base));
}

// --- backward -------------------------------------------------------------------------------------------

// loss = sum(out * w), accumulated in double.
double loss(const vkgmm::GmmProblem& p, const V& lhs, const V& rhs, const V& w) {
  const V out = vkgmm::reference::gmm(p, lhs, rhs);
  double s = 0;
  for (size_t i = 0; i < out.size(); ++i) s += double(out[i]) * w[i];
  return s;
}

void check_backward_against_finite_differences(bool transpose_rhs) {
  SCOPED_TRACE(transpose_rhs ? "transpose_rhs" : "plain");
  std::mt19937 rng(transpose_rhs ? 21 : 20);
  // Active groups 1 (rows 2-4) and 2 (rows 5-6); rows 0-1 and 7 are inactive, row 8 is past the sum.
  const int64_t m = 9, k = 3, n = 4, g_local = 2;
  auto p = gmm_problem(m, k, n, {2, 3, 2, 1});
  p.group_offset = 1;
  p.num_rhs_groups = g_local;
  p.transpose_rhs = transpose_rhs;
  V lhs = random_values(rng, m * k);
  V rhs = random_values(rng, g_local * k * n);
  const V w = random_values(rng, m * n);

  const auto grads = vkgmm::reference::gmm_backward(p, lhs, rhs, w);
  ASSERT_EQ(grads.d_lhs.size(), lhs.size());
  ASSERT_EQ(grads.d_rhs.size(), rhs.size());

  // The loss is linear in each argument, so central differences are exact up to f32 rounding of out.
  const float h = 1.0f / 64;
  auto central = [&](V& x, size_t i) {
    const float saved = x[i];
    x[i] = saved + h;
    const double up = loss(p, lhs, rhs, w);
    x[i] = saved - h;
    const double down = loss(p, lhs, rhs, w);
    x[i] = saved;
    return (up - down) / (2.0 * h);
  };
  for (size_t i = 0; i < lhs.size(); ++i) EXPECT_NEAR(grads.d_lhs[i], central(lhs, i), 1e-4) << "d_lhs " << i;
  for (size_t i = 0; i < rhs.size(); ++i) EXPECT_NEAR(grads.d_rhs[i], central(rhs, i), 1e-4) << "d_rhs " << i;

  // Rows outside the active groups get exactly 0, and some gradient is non-zero (not vacuous).
  for (int64_t r : {0, 1, 7, 8})
    for (int64_t c = 0; c < k; ++c) EXPECT_EQ(grads.d_lhs[r * k + c], 0.0f) << "row " << r;
  EXPECT_NE(grads.d_lhs[2 * k], 0.0f);
}

TEST(ReferenceBackward, MatchesFiniteDifferences) { check_backward_against_finite_differences(false); }
TEST(ReferenceBackward, MatchesFiniteDifferencesTransposed) { check_backward_against_finite_differences(true); }

TEST(ReferenceBackward, GradientsHaveTheInputTypes) {
  std::mt19937 rng(22);
  auto p = gmm_problem(5, 3, 2, {2, 3});
  p.lhs_type = DType::bf16;
  p.rhs_type = DType::f16;
  p.out_type = DType::f32;
  V d_out(5 * 2);
  for (auto& x : d_out) x = std::uniform_real_distribution<float>(-1, 1)(rng);  // not representable in 16 bits
  V lhs(5 * 3), rhs(2 * 3 * 2);
  for (auto& x : lhs) x = vkgmm::round_to(DType::bf16, std::uniform_real_distribution<float>(-1, 1)(rng));
  for (auto& x : rhs) x = vkgmm::round_to(DType::f16, std::uniform_real_distribution<float>(-1, 1)(rng));
  const auto g = vkgmm::reference::gmm_backward(p, lhs, rhs, d_out);
  for (float x : g.d_lhs) EXPECT_EQ(vkgmm::round_to(DType::bf16, x), x);
  for (float x : g.d_rhs) EXPECT_EQ(vkgmm::round_to(DType::f16, x), x);
}

// --- gmm epilogue ---------------------------------------------------------------------------------------

TEST(ReferenceEpilogue, BiasThenSwigluByHand) {
  // One row, one group: the product is the rhs row [1, 2, -1, 3] = [gate | up].
  auto p = gmm_problem(1, 1, 4, {1});
  const V lhs = {1}, rhs = {1, 2, -1, 3}, bias = {1, -2, 0.5f, 1};
  p.epilogue.bias = true;
  EXPECT_EQ(vkgmm::reference::gmm(p, lhs, rhs, {}, bias), (V{2, 0, -0.5f, 4}));
  // swiglu alone: silu([1, 2]) * [-1, 3]; silu(x) = x / (1 + e^-x).
  p.epilogue = {false, vkgmm::Activation::swiglu};
  EXPECT_EQ(vkgmm::reference::out_columns(p), 2);
  V out = vkgmm::reference::gmm(p, lhs, rhs);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FLOAT_EQ(out[0], -0.7310585786300049f);
  EXPECT_FLOAT_EQ(out[1], 5.284782467867294f);
  // The bias comes first: [2, 0 | -0.5, 4] -> [silu(2) * -0.5, silu(0) * 4].
  p.epilogue.bias = true;
  out = vkgmm::reference::gmm(p, lhs, rhs, {}, bias);
  EXPECT_FLOAT_EQ(out[0], -0.8807970779778823f);
  EXPECT_EQ(out[1], 0.0f);
}

// gpt-oss's clamped SwiGLU and GeGLU over [gate | up], past their bends: gate [8, -2 | up -9, 3] clamps
// the gate at 7 and up to [-7, 7]; GeGLU's gelu is the tanh form. Values from Python's math module.
TEST(ReferenceEpilogue, SwigluOaiAndGegluByHand) {
  auto p = gmm_problem(1, 1, 4, {1});
  const V lhs = {1};
  p.epilogue = {false, vkgmm::Activation::swiglu_oai};
  EXPECT_EQ(vkgmm::reference::out_columns(p), 2);
  V out = vkgmm::reference::gmm(p, lhs, {8, -2, -9, 3});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FLOAT_EQ(out[0], -41.99971876981991f);   // (-7 + 1) * 7 * sigmoid(1.702 * 7)
  EXPECT_FLOAT_EQ(out[1], -0.25736550742316744f);  // (3 + 1) * -2 * sigmoid(-3.404)
  p.epilogue = {false, vkgmm::Activation::geglu};
  out = vkgmm::reference::gmm(p, lhs, {1, -3, 2, 0.5f});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FLOAT_EQ(out[0], 1.6823839812165535f);     // gelu(1) * 2
  // gelu(-3) * 0.5: 1 + tanh(-2.47) cancels in fp32 (the reference's float tanh), so within 1e-7.
  EXPECT_NEAR(out[1], -0.0018186960408864972, 1e-7);
}

TEST(ReferenceEpilogue, BiasRowsFollowTheWindowAndExistingOutHasNOutColumns) {
  // Groups of one row; the window is group 1 alone, so its bias is bias row 0. Row 0 is inactive and
  // keeps existing_out, which has n_out = 1 column.
  auto p = gmm_problem(2, 1, 2, {1, 1});
  p.group_offset = 1;
  p.num_rhs_groups = 1;
  p.epilogue = {true, vkgmm::Activation::swiglu};
  // Row 1: [3 * 1, 3 * 2] + [-3, 1] = [0 | 7] -> silu(0) * 7 = 0; with gate bias 0 instead: silu(3) * 7.
  EXPECT_EQ(vkgmm::reference::gmm(p, {5, 3}, {1, 2}, {-9, -9}, {-3, 1}), (V{-9, 0}));
  const V out = vkgmm::reference::gmm(p, {5, 3}, {1, 2}, {-9, -9}, {0, 1});
  EXPECT_FLOAT_EQ(out[1], static_cast<float>(3 / (1 + std::exp(-3.0)) * 7));
}

TEST(ReferenceEpilogue, ProductIsRoundedToFloatBeforeTheBias) {
  // The product 1 + 2^-24 is exact in double but a tie in float, which goes to 1: + bias -1 gives 0
  // in fp32, where a double epilogue would keep 2^-24.
  auto p = gmm_problem(1, 2, 1, {1});
  p.epilogue.bias = true;
  EXPECT_EQ(vkgmm::reference::gmm(p, {1, std::ldexp(1.0f, -24)}, {1, 1}, {}, {-1}), (V{0}));
}

// --- gmm routed by expert ids ---------------------------------------------------------------------------

// Routing over experts [offset, offset + e_local): T = m, num_rhs_groups = e_local.
vkgmm::GmmProblem routed_problem(int64_t T, int64_t top_k, int64_t k, int64_t n, int64_t offset, int64_t e_local,
                                 bool combine) {
  vkgmm::GmmProblem p;
  p.m = T;
  p.k = k;
  p.n = n;
  p.group_offset = offset;
  p.num_rhs_groups = e_local;
  p.routing.top_k = top_k;
  p.routing.combine = combine;
  return p;
}

// Three experts [k=2, n=2]: identity, 2 * identity, the swap.
const V kThreeExperts = {1, 0, 0, 1, 2, 0, 0, 2, 0, 1, 1, 0};
// Token 0 -> experts 0 and 2; token 1 -> none and expert 1.
const std::vector<int32_t> kIds = {0, 2, -1, 1};
const V kTokens = {1, 2, 3, 4};

TEST(ReferenceRouted, PerSlotByHand) {
  auto p = routed_problem(2, 2, 2, 2, 0, 3, false);
  // [1,2] @ I, [1,2] @ swap, nothing, [3,4] @ 2I.
  EXPECT_EQ(vkgmm::reference::gmm_routed(p, kTokens, kThreeExperts, kIds), (V{1, 2, 2, 1, 0, 0, 6, 8}));
  // Only slots without a local expert keep existing_out; local slots are overwritten.
  p.existing_out = true;
  EXPECT_EQ(vkgmm::reference::gmm_routed(p, kTokens, kThreeExperts, kIds, {}, {10, 11, 12, 13, 14, 15, 16, 17}),
            (V{1, 2, 2, 1, 14, 15, 6, 8}));
}

TEST(ReferenceRouted, CombinedByHand) {
  auto p = routed_problem(2, 2, 2, 2, 0, 3, true);
  const V weights = {0.5f, 0.25f, 7, 2};  // the -1 slot's weight plays no part
  // 0.5 * [1,2] + 0.25 * [2,1]; 2 * [6,8].
  EXPECT_EQ(vkgmm::reference::gmm_routed(p, kTokens, kThreeExperts, kIds, weights), (V{1, 1.25f, 12, 16}));
  p.existing_out = true;  // added, not overwritten
  EXPECT_EQ(vkgmm::reference::gmm_routed(p, kTokens, kThreeExperts, kIds, weights, {1, 1, -1, -1}),
            (V{2, 2.25f, 11, 15}));
}

TEST(ReferenceRouted, OnlyIdsInTheWindowAreLocal) {
  // The window is expert 1 alone (rhs holds just it); ids 0 and 2 are other shards', -1 and -5 nobody's,
  // 7 past num_experts.
  auto p = routed_problem(3, 2, 2, 2, 1, 1, false);
  p.routing.num_experts = 3;
  const V two_identity = {2, 0, 0, 2};
  const std::vector<int32_t> ids = {0, 1, 2, -5, 7, 1};
  const V lhs = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(vkgmm::reference::gmm_routed(p, lhs, two_identity, ids), (V{0, 0, 2, 4, 0, 0, 0, 0, 0, 0, 10, 12}));
  p.routing.combine = true;
  EXPECT_EQ(vkgmm::reference::gmm_routed(p, lhs, two_identity, ids, {9, 1, 9, 9, 9, 0.5f}), (V{2, 4, 0, 0, 5, 6}));
}

TEST(ReferenceRouted, LhsPerSlot) {
  // Each slot brings its own row: [T=2, top_k=2, k=2].
  auto p = routed_problem(2, 2, 2, 2, 0, 3, false);
  p.routing.lhs_per_slot = true;
  const V lhs = {1, 2, 5, 7, 0, 0, 3, 4};
  EXPECT_EQ(vkgmm::reference::gmm_routed(p, lhs, kThreeExperts, kIds), (V{1, 2, 7, 5, 0, 0, 6, 8}));
}

TEST(ReferenceRouted, EpilogueAppliesPerSlotBeforeTheWeight) {
  // One token, two slots on experts 0 and 1 (k = 1, n = 2: [gate | up]); bias per expert.
  auto p = routed_problem(1, 2, 1, 2, 0, 2, true);
  p.epilogue = {true, vkgmm::Activation::swiglu};
  const V rhs = {1, 1, 2, 3}, bias = {-1, 1, 0, 0};
  // Slot 0: [2,2] + [-1,1] = [1 | 3] -> silu(1) * 3; slot 1: [4 | 6] -> silu(4) * 6; weights 0.5, 2.
  auto silu = [](double x) { return x / (1 + std::exp(-x)); };
  const V out = vkgmm::reference::gmm_routed(p, {2}, rhs, {0, 1}, {0.5f, 2}, {}, bias);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NEAR(out[0], 0.5 * silu(1) * 3 + 2 * silu(4) * 6, 1e-5);  // fp32 steps: a few ulps
}

TEST(ReferenceRouted, CombineSumsSlotsInAscendingOrderInFloat) {
  // Three slots of one token, every expert the identity on k = n = 1: the weights are the terms.
  auto p = routed_problem(1, 3, 1, 1, 0, 3, true);
  const V lhs = {1}, rhs = {1, 1, 1};
  const std::vector<int32_t> ids = {0, 1, 2};
  auto combined = [&](V weights, V existing = {}) {
    p.existing_out = !existing.empty();
    return vkgmm::reference::gmm_routed(p, lhs, rhs, ids, weights, existing)[0];
  };
  // fp32, not double: 1e8 + 1 is 1e8 (the spacing there is 8), so the 1 is lost.
  EXPECT_EQ(combined({1e8f, 1, -1e8f}), 0.0f);
  // Ascending j: (1e8 - 1e8) + 1 = 1, where descending order would give (1 - 1e8) + 1e8 = 0.
  EXPECT_EQ(combined({1e8f, -1e8f, 1}), 1.0f);
  // existing_out comes last: (1e8 + 1 + 0) - 1e8 = 0, where adding it first would give 1.
  EXPECT_EQ(combined({1e8f, 1, 0}, {-1e8f}), 0.0f);
}

// A top-k router over random logits: top_k distinct experts of [0, E) per token, best first; then
// about one slot in six is dropped (-1), as capacity limits do.
std::vector<int32_t> random_routing(std::mt19937& rng, int64_t T, int64_t top_k, int64_t E) {
  std::vector<int32_t> ids;
  std::vector<int32_t> experts(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; ++t) {
    std::iota(experts.begin(), experts.end(), 0);
    std::shuffle(experts.begin(), experts.end(), rng);
    for (int64_t j = 0; j < top_k; ++j) ids.push_back(rng() % 6 == 0 ? -1 : experts[static_cast<size_t>(j)]);
  }
  return ids;
}

struct EquivalenceCase {
  bool lhs_per_slot, transpose, bias, swiglu;
};

// Routed per-slot output == plain grouped gmm over the local slots' rows sorted stably by expert, then
// put back in slot order; and the combined output is the fp32 weighted sum of those per-slot rows.
void check_routed_equals_sorted_gmm(const EquivalenceCase& c) {
  SCOPED_TRACE(std::string(c.lhs_per_slot ? "lhs_per_slot" : "lhs_2d") + (c.transpose ? " T" : "") +
               (c.bias ? " bias" : "") + (c.swiglu ? " swiglu" : ""));
  std::mt19937 rng(40 + c.lhs_per_slot + 2 * c.transpose + 4 * c.bias + 8 * c.swiglu);
  const int64_t T = 23, top_k = 3, E = 6, offset = 1, e_local = 3, k = 5, n = 8;
  auto p = routed_problem(T, top_k, k, n, offset, e_local, false);
  p.routing.lhs_per_slot = c.lhs_per_slot;
  p.routing.num_experts = E;
  p.transpose_rhs = c.transpose;
  p.epilogue = {c.bias, c.swiglu ? vkgmm::Activation::swiglu : vkgmm::Activation::none};
  p.existing_out = true;
  const int64_t slots = T * top_k, n_out = vkgmm::reference::out_columns(p);
  const auto ids = random_routing(rng, T, top_k, E);
  const V lhs = random_values(rng, size_t((c.lhs_per_slot ? slots : T) * k));
  const V rhs = random_values(rng, size_t(e_local * k * n));
  const V bias = c.bias ? random_values(rng, size_t(e_local * n)) : V{};
  const V existing = random_values(rng, size_t(slots * n_out));
  const V per_slot = vkgmm::reference::gmm_routed(p, lhs, rhs, ids, {}, existing, bias);

  // The local slots, stably sorted by expert (token order within one), as rows of a grouped gmm over all E.
  std::vector<int64_t> order;
  for (int64_t s = 0; s < slots; ++s)
    if (ids[size_t(s)] >= offset && ids[size_t(s)] < offset + e_local) order.push_back(s);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return ids[size_t(a)] < ids[size_t(b)]; });
  ASSERT_GT(order.size(), 10u) << "too few local slots to mean anything";
  auto g = gmm_problem(int64_t(order.size()), k, n, std::vector<int32_t>(size_t(E), 0));
  g.group_offset = offset;
  g.num_rhs_groups = e_local;
  g.transpose_rhs = c.transpose;
  g.epilogue = p.epilogue;
  V rows;
  for (int64_t s : order) {
    ++g.group_sizes[size_t(ids[size_t(s)])];
    const int64_t r = c.lhs_per_slot ? s : s / top_k;
    rows.insert(rows.end(), lhs.begin() + r * k, lhs.begin() + (r + 1) * k);
  }
  const V grouped = vkgmm::reference::gmm(g, rows, rhs, {}, bias);
  V want = existing;
  for (size_t i = 0; i < order.size(); ++i)
    std::copy(grouped.begin() + int64_t(i) * n_out, grouped.begin() + int64_t(i + 1) * n_out,
              want.begin() + order[i] * n_out);
  EXPECT_EQ(per_slot, want);

  // Combined: the per-slot rows (f32, so exactly the fp32 values) summed in slot order, + existing_out.
  p.routing.combine = true;
  const V weights = random_values(rng, size_t(slots));
  const V existing_t = random_values(rng, size_t(T * n_out));
  V sum(size_t(T * n_out));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t cc = 0; cc < n_out; ++cc) {
      float acc = 0;
      for (int64_t j = 0; j < top_k; ++j) {
        const int64_t s = t * top_k + j;
        if (ids[size_t(s)] >= offset && ids[size_t(s)] < offset + e_local) {
          const float term = weights[size_t(s)] * per_slot[size_t(s * n_out + cc)];
          acc += term;
        }
      }
      sum[size_t(t * n_out + cc)] = acc + existing_t[size_t(t * n_out + cc)];
    }
  EXPECT_EQ(vkgmm::reference::gmm_routed(p, lhs, rhs, ids, weights, existing_t, bias), sum);
}

TEST(ReferenceRouted, PerSlotEqualsGroupedGmmOnSortedRows) {
  for (bool per_slot : {false, true})
    for (bool transpose : {false, true})
      for (bool bias : {false, true})
        for (bool swiglu : {false, true}) check_routed_equals_sorted_gmm({per_slot, transpose, bias, swiglu});
}

// --- conversions ----------------------------------------------------------------------------------------

float bits_to_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t float_to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// The value of an f16 encoding from its definition, independent of the library's bit shuffling.
double f16_value(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  const double mag = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return s ? -mag : mag;
}

bool is_f16_nan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }

TEST(Convert, F16KnownValues) {
  using vkgmm::f32_to_f16;
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);  // largest finite
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7BFF);  // below the halfway point to 65536
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);  // the tie rounds to even, which is infinity
  EXPECT_EQ(f32_to_f16(1e6f), 0x7C00);
  EXPECT_EQ(f32_to_f16(-1e30f), 0xFC00);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), 0xFC00);
  // Ties to even at 1: 1 + 2^-11 is halfway between 0x3C00 (even) and 0x3C01.
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  // Subnormals: 2^-24 is the smallest; 2^-25 ties to 0; 1.5 * 2^-24 ties up to 2 * 2^-24.
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(f32_to_f16(-std::ldexp(1.0f, -25)), 0x8000);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25) * 1.0001f), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.0f, -24)), 0x03FF);  // largest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.5f, -24)), 0x0400);  // tie rounds up into the smallest normal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)), 0x0400);
  EXPECT_EQ(f32_to_f16(FLT_TRUE_MIN), 0x0000);              // f32 subnormals are far below f16's
}

TEST(Convert, F16NaNStaysQuietNaN) {
  for (uint32_t bits : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7F802000u, 0x7FBFFFFFu, 0xFF800001u}) {
    const uint16_t h = vkgmm::f32_to_f16(bits_to_float(bits));
    EXPECT_TRUE(is_f16_nan(h)) << std::hex << bits << " -> " << h;
    EXPECT_TRUE(h & 0x0200u) << "quiet bit, " << std::hex << bits;
    EXPECT_EQ(h >> 15, bits >> 31) << "sign";
    EXPECT_TRUE(std::isnan(vkgmm::f16_to_f32(h)));
  }
}

TEST(Convert, F16WideningIsExactForEveryEncoding) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float f = vkgmm::f16_to_f32(h);
    if (is_f16_nan(h)) {
      EXPECT_TRUE(std::isnan(f)) << i;
      continue;
    }
    if ((h & 0x7FFFu) == 0x7C00u) {
      EXPECT_TRUE(std::isinf(f)) << i;
    } else {
      EXPECT_EQ(double(f), f16_value(h)) << i;
    }
    EXPECT_EQ(std::signbit(f), (h >> 15) != 0) << i;
    EXPECT_EQ(vkgmm::f32_to_f16(f), h) << "round trip " << i;  // covers -0 and every subnormal
  }
}

// Nearest finite f16 to |x| by search over the value table, ties to the even encoding.
uint16_t nearest_f16(double ax) {
  if (ax >= 65520.0) return 0x7C00;  // at or past the halfway point above the largest finite value
  uint16_t lo = 0, hi = 0x7BFF;      // positive encodings are ordered like their values
  while (lo < hi) {                  // smallest encoding with value >= ax
    const uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
    if (f16_value(mid) >= ax) hi = mid; else lo = static_cast<uint16_t>(mid + 1);
  }
  if (lo == 0 || f16_value(lo) == ax) return lo;
  const double up = f16_value(lo) - ax, down = ax - f16_value(lo - 1);
  if (up < down) return lo;
  if (down < up) return static_cast<uint16_t>(lo - 1);
  return (lo & 1) ? static_cast<uint16_t>(lo - 1) : lo;
}

TEST(Convert, F16RoundsToNearestEvenOnRandomFloats) {
  std::mt19937 rng(31);
  // Exponents from well below the subnormals to past the overflow; random mantissas hit ties rarely, so
  // also take mantissas that are exact ties and ties +- one f32 ulp.
  std::uniform_int_distribution<uint32_t> exp(127 - 30, 127 + 17), mant(0, 0x7FFFFFu), sign(0, 1);
  for (int i = 0; i < 200000; ++i) {
    uint32_t mm = mant(rng);
    if (i % 4 == 1) mm = (mm & ~0x1FFFu) | 0x1000u;         // a tie for f16 normals
    if (i % 4 == 2) mm = ((mm & ~0x1FFFu) | 0x1000u) - 1;  // just below it
    const uint32_t bits = (sign(rng) << 31) | (exp(rng) << 23) | mm;
    const float x = bits_to_float(bits);
    const uint16_t want = static_cast<uint16_t>(nearest_f16(std::fabs(double(x))) | ((bits >> 31) << 15));
    ASSERT_EQ(vkgmm::f32_to_f16(x), want) << std::hexfloat << x;
  }
}

TEST(Convert, F16EveryHalfwayPointTiesToEven) {
  // Midpoints between neighbouring finite f16 values (subnormal and normal) have at most 12 significant
  // bits, so they are exact floats: each must go to the even neighbour, and one f32 ulp either side of it
  // to the nearer one.
  for (uint16_t a = 0; a < 0x7BFF; ++a) {
    const auto b = static_cast<uint16_t>(a + 1);
    const float mid = static_cast<float>((f16_value(a) + f16_value(b)) / 2);
    ASSERT_EQ(double(mid), (f16_value(a) + f16_value(b)) / 2);
    const uint16_t even = (a & 1) ? b : a;
    EXPECT_EQ(vkgmm::f32_to_f16(mid), even) << a;
    EXPECT_EQ(vkgmm::f32_to_f16(-mid), even | 0x8000u) << a;
    EXPECT_EQ(vkgmm::f32_to_f16(std::nextafter(mid, 0.0f)), a) << a;
    EXPECT_EQ(vkgmm::f32_to_f16(std::nextafter(mid, 1e9f)), b) << a;
  }
}

TEST(Convert, Bf16KnownValues) {
  using vkgmm::f32_to_bf16;
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);  // tie, to even
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(f32_to_bf16(bits_to_float(0x3F808001u)), 0x3F81);  // just past the tie
  EXPECT_EQ(f32_to_bf16(FLT_MAX), 0x7F80);                      // rounds past the largest bf16
  EXPECT_EQ(f32_to_bf16(bits_to_float(0x7F7F7FFFu)), 0x7F7F);    // largest finite, below the tie
  EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(f32_to_bf16(bits_to_float(0x00012345u)), 0x0001);    // f32 subnormal keeps a bf16 subnormal
  for (uint32_t bits : {0x7FC00000u, 0x7F800001u, 0xFF80FFFFu, 0x7FFFFFFFu}) {
    const uint16_t h = f32_to_bf16(bits_to_float(bits));
    EXPECT_EQ(h & 0x7F80u, 0x7F80u) << std::hex << bits;
    EXPECT_TRUE(h & 0x0040u) << "quiet NaN, " << std::hex << bits;
    EXPECT_EQ(h >> 15, bits >> 31);
  }
}

TEST(Convert, Bf16WideningIsExactForEveryEncoding) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float f = vkgmm::bf16_to_f32(h);
    EXPECT_EQ(float_to_bits(f), i << 16) << i;
    if (!std::isnan(f)) {
      EXPECT_EQ(vkgmm::f32_to_bf16(f), h) << i;
    }
  }
}

TEST(Convert, Bf16RoundsToNearestEvenOnRandomFloats) {
  std::mt19937 rng(32);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = any(rng);
    if (i % 3 == 1) bits = (bits & ~0xFFFFu) | 0x8000u;  // exact ties
    const float x = bits_to_float(bits);
    if (std::isnan(x)) continue;
    // Neighbours by truncation and one step up; pick by exact distance in double (or long double for
    // the step to infinity, whose "value" is 2^128).
    const uint32_t lo = bits >> 16, hi = lo + 1;
    const long double vx = std::fabs(static_cast<long double>(x));
    const long double vlo = std::fabs(static_cast<long double>(bits_to_float(lo << 16)));
    const long double vhi = (hi & 0x7FFFu) == 0x7F80u ? std::ldexp(1.0L, 128)
                                                       : std::fabs(static_cast<long double>(bits_to_float(hi << 16)));
    uint32_t want = lo;
    if ((bits & 0xFFFFu) != 0 && (vhi - vx < vx - vlo || (vhi - vx == vx - vlo && (lo & 1)))) want = hi;
    ASSERT_EQ(vkgmm::f32_to_bf16(x), want) << std::hex << bits;
  }
}

TEST(Convert, RoundToEncodeDecode) {
  const V values = {0.0f, -0.0f, 1.0f, -1.5f, 3.14159f, 1e-6f, 70000.0f, 1.0f + std::ldexp(1.0f, -9)};
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    SCOPED_TRACE(vkgmm::dtype_name(t));
    const auto bytes = vkgmm::encode(t, values);
    ASSERT_EQ(bytes.size(), values.size() * vkgmm::dtype_size(t));
    const V back = vkgmm::decode(t, bytes.data(), values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_EQ(float_to_bits(back[i]), float_to_bits(vkgmm::round_to(t, values[i]))) << i;
      EXPECT_EQ(vkgmm::round_to(t, back[i]), back[i]) << "idempotent " << i;
    }
  }
  EXPECT_EQ(vkgmm::round_to(DType::f16, 70000.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(vkgmm::round_to(DType::bf16, 70000.0f), 70144.0f);
  // decode reads from any byte offset (mapped buffers need only be element-aligned).
  const auto bytes = vkgmm::encode(DType::f32, {2.5f});
  std::vector<uint8_t> shifted(1 + bytes.size());
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  EXPECT_EQ(vkgmm::decode(DType::f32, shifted.data() + 1, 1), V{2.5f});
}

TEST(Types, NamesAndSizes) {
  EXPECT_EQ(vkgmm::dtype_size(DType::f32), 4u);
  EXPECT_EQ(vkgmm::dtype_size(DType::f16), 2u);
  EXPECT_EQ(vkgmm::dtype_size(DType::bf16), 2u);
  for (DType t : {DType::f32, DType::f16, DType::bf16}) EXPECT_EQ(vkgmm::parse_dtype(vkgmm::dtype_name(t)), t);
  EXPECT_STREQ(vkgmm::dtype_name(DType::bf16), "bf16");
  EXPECT_EQ(vkgmm::parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(vkgmm::parse_dtype("f64"), std::nullopt);
  EXPECT_EQ(vkgmm::parse_dtype(""), std::nullopt);
  EXPECT_STREQ(vkgmm::status_name(vkgmm::Status::invalid_argument), "invalid_argument");
  EXPECT_STREQ(vkgmm::status_name(vkgmm::Status::device_lost), "device_lost");
}

}  // namespace
