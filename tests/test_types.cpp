// Every element-type combination of gmm, tgmm and the backward, against the reference with JAX's
// tolerances (any 16-bit type: atol 1e-3, rtol 1e-2).
#include <cstdlib>
#include <cstring>

#include "context_impl.hpp"  // an app-owned VkBuffer for the last test
#include "shader_modules.hpp"
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
    const auto got = run_gmm(ctx(), p, lhs, rhs, ex);
    EXPECT_TRUE(all_close(got, reference::gmm(p, lhs, rhs, ex), t.atol, t.rtol)) << schedule_name(s);
    EXPECT_TRUE(same_bits(run_gmm_device(ctx(), p, lhs, rhs, ex), got)) << schedule_name(s) << ", device sizes";
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
    const auto got = run_tgmm(ctx(), p, lhs, rhs, ex);
    EXPECT_TRUE(all_close(got, reference::tgmm(p, lhs, rhs, ex), t.atol, t.rtol)) << schedule_name(s);
    EXPECT_TRUE(same_bits(run_tgmm_device(ctx(), p, lhs, rhs, ex), got)) << schedule_name(s) << ", device sizes";
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
  const reference::Gradients dev = run_backward_device(ctx(), p, lhs, rhs, d_out);
  EXPECT_TRUE(same_bits(dev.d_lhs, got.d_lhs)) << "d_lhs, device group sizes";
  EXPECT_TRUE(same_bits(dev.d_rhs, got.d_rhs)) << "d_rhs, device group sizes";
}

INSTANTIATE_TEST_SUITE_P(All, GmmTypes, ::testing::ValuesIn(all_combinations()), type_case_name);
INSTANTIATE_TEST_SUITE_P(All, TgmmTypes, ::testing::ValuesIn(all_combinations()), type_case_name);
INSTANTIATE_TEST_SUITE_P(All, BackwardTypes, ::testing::ValuesIn(all_combinations()), type_case_name);

// --- odd element counts: rounding to whole 32-bit words is vkgmm's business, never the caller's ----------

// A buffer of exactly the encoded bytes of `values` (an odd count of 16-bit elements ends mid-word).
Buffer exact_upload(Context& ctx, DType t, const std::vector<float>& values) {
  const std::vector<uint8_t> bytes = encode(t, values);
  Buffer b = ctx.create_buffer(bytes.size());
  EXPECT_EQ(b.size(), bytes.size());  // the padding vkgmm allocates is its own
  b.upload(bytes.data(), bytes.size());
  return b;
}

std::vector<float> exact_download(const Buffer& b, DType t, size_t count) {
  std::vector<uint8_t> bytes(count * dtype_size(t));
  b.download(bytes.data(), bytes.size());
  return decode(t, bytes.data(), count);
}

// Every operand of each problem below has an odd element count; the operands are 16-bit (the parameter)
// in buffers of exactly their bytes, run through the conveniences vkgmm::gmm and vkgmm::tgmm. Named
// *Types* so ctest runs it on the packed path too (.packed32) and without texel views (.ssbo).
class OddCountTypes : public DeviceTest, public ::testing::WithParamInterface<DType> {};

TEST_P(OddCountTypes, GmmEveryOperand) {
  const DType t = GetParam();
  std::mt19937 rng(7 + uint32_t(t));
  GmmProblem p;
  p.m = 3;  // lhs [3, 259] is the shape the CLI refused: 777 elements, 1554 bytes
  p.k = 259;
  p.n = 5;
  p.group_sizes = {1, 1, 1};
  p.lhs_type = p.rhs_type = p.out_type = t;
  p.existing_out = true;
  const auto lhs = random_values(3 * 259, t, rng), rhs = random_values(3 * 259 * 5, t, rng),
             ex = random_values(3 * 5, t, rng);
  const Tolerance tol = tolerance_for(t, t, t);
  for (Schedule s : {Schedule::direct, Schedule::shared}) {
    p.schedule = s;
    const OperandSizes z = GmmPlan(ctx(), p).sizes();
    EXPECT_EQ(z.lhs, 777u * 2);
    EXPECT_EQ(z.rhs, 3885u * 2);
    EXPECT_EQ(z.out, 15u * 2);
    Buffer l = exact_upload(ctx(), t, lhs), r = exact_upload(ctx(), t, rhs), e = exact_upload(ctx(), t, ex);
    Buffer o = exact_upload(ctx(), t, std::vector<float>(15, 0.5f));
    gmm(ctx(), p, {l.view(), r.view(), o.view(), e.view()});
    EXPECT_TRUE(all_close(exact_download(o, t, 15), reference::gmm(p, lhs, rhs, ex), tol.atol, tol.rtol))
        << schedule_name(s);
    // existing_out as the output itself (in place), still exactly 15 elements.
    gmm(ctx(), p, {l.view(), r.view(), e.view(), e.view()});
    EXPECT_TRUE(all_close(exact_download(e, t, 15), reference::gmm(p, lhs, rhs, ex), tol.atol, tol.rtol))
        << schedule_name(s) << " in place";
  }
}

TEST_P(OddCountTypes, TgmmEveryOperand) {
  const DType t = GetParam();
  std::mt19937 rng(11 + uint32_t(t));
  TgmmProblem p;
  p.m = 3;
  p.k = 259;
  p.n = 5;
  p.group_sizes = {1, 1, 1};
  p.lhs_type = p.rhs_type = p.out_type = t;
  p.existing_out = true;
  const auto lhs = random_values(259 * 3, t, rng), rhs = random_values(3 * 5, t, rng),
             ex = random_values(3 * 259 * 5, t, rng);
  const Tolerance tol = tolerance_for(t, t, t);
  for (Schedule s : {Schedule::direct, Schedule::shared}) {
    p.schedule = s;
    const OperandSizes z = TgmmPlan(ctx(), p).sizes();
    EXPECT_EQ(z.lhs, 777u * 2);
    EXPECT_EQ(z.rhs, 15u * 2);
    EXPECT_EQ(z.out, 3885u * 2);
    Buffer l = exact_upload(ctx(), t, lhs), r = exact_upload(ctx(), t, rhs), e = exact_upload(ctx(), t, ex);
    Buffer o = exact_upload(ctx(), t, std::vector<float>(3885, 0.5f));
    tgmm(ctx(), p, {l.view(), r.view(), o.view(), e.view()});
    EXPECT_TRUE(all_close(exact_download(o, t, 3885), reference::tgmm(p, lhs, rhs, ex), tol.atol, tol.rtol))
        << schedule_name(s);
  }
}

// gmm with lhs [3, 7], rhs [1, 7, 5] and out [3, 5] of type t: 21, 35 and 15 elements, all odd.
GmmProblem small_odd_gmm(DType t) {
  GmmProblem p;
  p.m = 3;
  p.k = 7;
  p.n = 5;
  p.group_sizes = {3};
  p.lhs_type = p.rhs_type = p.out_type = t;
  return p;
}

// Views inside one buffer that end mid-word next to another operand's elements: the neighbour's half
// of the shared word is read (and discarded) but never changed.
TEST_P(OddCountTypes, NeighbourHalfWordsSurvive) {
  const DType t = GetParam();
  std::mt19937 rng(13 + uint32_t(t));
  const GmmProblem p = small_odd_gmm(t);
  const auto lhs = random_values(21, t, rng), rhs = random_values(35, t, rng);
  // One buffer: out (15 elements) at element 0, then a sentinel element sharing out's last word.
  std::vector<float> init(16, 0.25f);
  init[15] = -0.75f;
  Buffer l = exact_upload(ctx(), t, lhs), r = exact_upload(ctx(), t, rhs), o = exact_upload(ctx(), t, init);
  gmm(ctx(), p, {l.view(), r.view(), o.view(0, 30), {}});
  const std::vector<float> got = exact_download(o, t, 16);
  const Tolerance tol = tolerance_for(t, t, t);
  EXPECT_TRUE(all_close({got.begin(), got.begin() + 15}, reference::gmm(p, lhs, rhs), tol.atol, tol.rtol));
  EXPECT_EQ(got[15], -0.75f);
}

// An app's own VkBuffer of exactly the elements' bytes: vkgmm cannot know the buffer has no byte past
// the view, so it never binds past it. With 16-bit storage the shaders access exactly the elements and
// the run succeeds; on the packed path (whole words only) the view is refused, naming the operand.
TEST_P(OddCountTypes, AppBufferEndingMidWord) {
  const DType t = GetParam();
  std::mt19937 rng(17 + uint32_t(t));

  const GmmProblem p = small_odd_gmm(t);
  const auto lhs = random_values(21, t, rng), rhs = random_values(35, t, rng);
  AppBuffer l(ctx(), encode(t, lhs), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT),
      r(ctx(), encode(t, rhs), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT),
      o(ctx(), std::vector<uint8_t>(30, 0), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
  const GmmOperands ops{{l.buffer, 0, 42}, {r.buffer, 0, 70}, {o.buffer, 0, 30}, {}};
  // The packed path, by the rule of host/shader_modules.cpp (the context's options decide).
  if (!use_storage16(ctx().info(), *ctx().options().storage16, true)) {
    try {
      gmm(ctx(), p, ops);
      ADD_FAILURE() << "a view ending mid-word in an app buffer was bound on the packed path";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("gmm: lhs: "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("16-bit storage"), std::string::npos) << e.what();
    }
    return;
  }
  gmm(ctx(), p, ops);
  const std::vector<float> got = decode(t, static_cast<const uint8_t*>(o.mapped), 15);
  const Tolerance tol = tolerance_for(t, t, t);
  EXPECT_TRUE(all_close(got, reference::gmm(p, lhs, rhs), tol.atol, tol.rtol));
}

INSTANTIATE_TEST_SUITE_P(All, OddCountTypes, ::testing::Values(DType::f16, DType::bf16),
                         [](const ::testing::TestParamInfo<DType>& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace vkgmm::test
