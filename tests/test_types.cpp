// Every element-type combination of gmm, tgmm and the backward, against the reference with JAX's
// tolerances (any 16-bit type: atol 1e-3, rtol 1e-2).
#include "gpu_harness.hpp"

namespace vkgmm::test {
namespace {

struct TypeCase {
  DType lhs, rhs, out;
};

std::string type_case_name(const ::testing::TestParamInfo<TypeCase>& info) {
  return std::string(dtype_name(info.param.lhs)) + "_" + dtype_name(info.param.rhs) + "_" + dtype_name(info.param.out);
}

std::vector<TypeCase> all_combinations() {
  std::vector<TypeCase> out;
  for (DType a : {DType::f32, DType::f16, DType::bf16})
    for (DType b : {DType::f32, DType::f16, DType::bf16})
      for (DType o : {DType::f32, DType::f16, DType::bf16}) out.push_back({a, b, o});
  return out;
}

class GmmTypes : public DeviceTest, public ::testing::WithParamInterface<TypeCase> {};
class TgmmTypes : public DeviceTest, public ::testing::WithParamInterface<TypeCase> {};
class BackwardTypes : public DeviceTest, public ::testing::WithParamInterface<TypeCase> {};

TEST_P(GmmTypes, MatchesReference) {
  const TypeCase& c = GetParam();
  std::mt19937 rng(uint32_t(c.lhs) * 9 + uint32_t(c.rhs) * 3 + uint32_t(c.out));
  GmmProblem p;
  p.m = 67;  // odd sizes: 16-bit rows straddle 32-bit words
  p.k = 33;
  p.n = 21;
  p.group_sizes = make_group_sizes(Sizes::empty_ends, 5, 60, rng);
  p.group_offset = 1;
  p.num_rhs_groups = 3;
  p.existing_out = true;
  p.transpose_rhs = c.lhs == c.rhs;
  p.lhs_type = c.lhs;
  p.rhs_type = c.rhs;
  p.out_type = c.out;
  auto lhs = random_values(size_t(p.m) * p.k, c.lhs, rng);
  auto rhs = random_values(size_t(3) * p.k * p.n, c.rhs, rng);
  auto ex = random_values(size_t(p.m) * p.n, c.out, rng);
  const Tolerance t = tolerance_for(c.lhs, c.rhs, c.out);
  for (Schedule s : {Schedule::direct, Schedule::shared}) {
    p.schedule = s;
    EXPECT_TRUE(all_close(run_gmm(ctx(), p, lhs, rhs, ex), reference::gmm(p, lhs, rhs, ex), t.atol, t.rtol))
        << schedule_name(s);
  }
}

TEST_P(TgmmTypes, MatchesReference) {
  const TypeCase& c = GetParam();
  std::mt19937 rng(100 + uint32_t(c.lhs) * 9 + uint32_t(c.rhs) * 3 + uint32_t(c.out));
  TgmmProblem p;
  p.m = 57;
  p.k = 19;
  p.n = 23;
  p.group_sizes = make_group_sizes(Sizes::empty_ends, 6, 57, rng);
  p.group_offset = 1;
  p.num_actual_groups = 4;
  p.existing_out = true;
  p.lhs_type = c.lhs;
  p.rhs_type = c.rhs;
  p.out_type = c.out;
  auto lhs = random_values(size_t(p.k) * p.m, c.lhs, rng);
  auto rhs = random_values(size_t(p.m) * p.n, c.rhs, rng);
  auto ex = random_values(size_t(4) * p.k * p.n, c.out, rng);
  const Tolerance t = tolerance_for(c.lhs, c.rhs, c.out);
  for (Schedule s : {Schedule::direct, Schedule::shared}) {
    p.schedule = s;
    EXPECT_TRUE(all_close(run_tgmm(ctx(), p, lhs, rhs, ex), reference::tgmm(p, lhs, rhs, ex), t.atol, t.rtol))
        << schedule_name(s);
  }
}

TEST_P(BackwardTypes, MatchesReference) {
  const TypeCase& c = GetParam();
  std::mt19937 rng(200 + uint32_t(c.lhs) * 9 + uint32_t(c.rhs) * 3 + uint32_t(c.out));
  GmmProblem p;
  p.m = 41;
  p.k = 15;
  p.n = 13;
  p.group_sizes = make_group_sizes(Sizes::split_tiles, 4, 41, rng);
  p.transpose_rhs = c.out == DType::f16;
  p.lhs_type = c.lhs;
  p.rhs_type = c.rhs;
  p.out_type = c.out;
  auto lhs = random_values(size_t(p.m) * p.k, c.lhs, rng);
  auto rhs = random_values(size_t(4) * p.k * p.n, c.rhs, rng);
  auto d_out = random_values(size_t(p.m) * p.n, c.out, rng);
  const Tolerance t = tolerance_for(c.lhs, c.rhs, c.out);
  auto got = run_backward(ctx(), p, lhs, rhs, d_out);
  auto want = reference::gmm_backward(p, lhs, rhs, d_out);
  EXPECT_TRUE(all_close(got.d_lhs, want.d_lhs, t.atol, t.rtol)) << "d_lhs";
  EXPECT_TRUE(all_close(got.d_rhs, want.d_rhs, t.atol, t.rtol)) << "d_rhs";
}

INSTANTIATE_TEST_SUITE_P(All, GmmTypes, ::testing::ValuesIn(all_combinations()), type_case_name);
INSTANTIATE_TEST_SUITE_P(All, TgmmTypes, ::testing::ValuesIn(all_combinations()), type_case_name);
INSTANTIATE_TEST_SUITE_P(All, BackwardTypes, ::testing::ValuesIn(all_combinations()), type_case_name);

}  // namespace
}  // namespace vkgmm::test
