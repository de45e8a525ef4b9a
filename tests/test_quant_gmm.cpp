// gmm with expert weights in GGUF's block formats, dequantized in the kernel's inner loop, against the
// reference on the decoded weights (tests/test_quant.cpp pins the decoding itself): every format, both
// layouts (blocks along k of [n, k] rows, GGUF's, or along n of [k, n] rows), with host and device group
// sizes and routed by ids with the epilogues, on both schedules, for f32, f16 and bf16 activations.
#include "block_formats.hpp"
#include "gpu_harness.hpp"
#include "vkgmm/convert.hpp"
#include "vkgmm/quant.hpp"

namespace vkgmm::test {
namespace {

enum class Mode { host_sizes, device_sizes, routed_swiglu, routed_combined };
const char* mode_name(Mode m) {
  switch (m) {
    case Mode::host_sizes: return "host";
    case Mode::device_sizes: return "device";
    case Mode::routed_swiglu: return "ids_swiglu_bias";
    case Mode::routed_combined: return "ids_combined";
  }
  return "?";
}

struct QuantCase {
  DType format;
  bool transposed;  // rhs [E, n, k], blocks along k (GGUF's layout); else [E, k, n], blocks along n
  Mode mode;
  DType activations;
  Schedule schedule;
};

std::string case_name(const QuantCase& c) {
  return std::string(dtype_name(c.format)) + (c.transposed ? "_nk_" : "_kn_") + mode_name(c.mode) + "_" +
         dtype_name(c.activations) + "_" + schedule_name(c.schedule);
}
void PrintTo(const QuantCase& c, std::ostream* os) { *os << case_name(c); }

std::vector<QuantCase> quant_cases() {
  const std::vector<DType> formats = block_formats();
  const Mode modes[] = {Mode::host_sizes, Mode::device_sizes, Mode::routed_swiglu, Mode::routed_combined};
  const DType acts[] = {DType::f32, DType::f16, DType::bf16};
  // Every format x mode x activation type; the layout and the schedule alternate so that each format
  // meets both of each in every mode.
  std::vector<QuantCase> out;
  uint32_t i = 0;
  for (DType f : formats)
    for (Mode m : modes)
      for (DType a : acts) {
        out.push_back({f, i % 2 == 0, m, a, (i / 2) % 2 ? Schedule::shared : Schedule::direct});
        ++i;
      }
  return out;
}

class QuantGmm : public DeviceTest, public ::testing::WithParamInterface<QuantCase> {};

TEST_P(QuantGmm, MatchesReferenceOnDecodedWeights) {
  const QuantCase& c = GetParam();
  SCOPED_TRACE(case_name(c));
  std::mt19937 rng(11 + uint32_t(c.format) * 7 + uint32_t(c.mode));
  const int64_t B = int64_t(block_elements(c.format));
  GmmProblem p;
  p.transpose_rhs = c.transposed;
  // The blocked axis holds two blocks; the other is odd-sized.
  const bool routed = c.mode == Mode::routed_swiglu || c.mode == Mode::routed_combined;
  p.k = c.transposed ? 2 * B : 21;
  p.n = c.transposed ? (c.mode == Mode::routed_swiglu ? 2 * 13 : 19) : 2 * B;
  p.lhs_type = c.activations;
  p.rhs_type = c.format;
  p.out_type = DType::f32;
  const int64_t E = 3;
  p.num_rhs_groups = E;
  std::vector<int32_t> ids;
  std::vector<float> weights, bias;
  if (routed) {
    p.m = 9;
    p.routing = {2, false, c.mode == Mode::routed_combined, E};
    for (int64_t t = 0; t < p.m; ++t) ids.push_back(int32_t(t % E)), ids.push_back(int32_t((t + 1 + t / 3) % E));
    if (p.routing.combine) weights = random_values(size_t(p.m * 2), DType::f32, rng);
    if (c.mode == Mode::routed_swiglu) {
      p.epilogue = {true, Activation::swiglu};
      bias = random_values(size_t(E * p.n), DType::f32, rng);
    }
  } else {
    p.m = 37;
    p.group_sizes = make_group_sizes(Sizes::empty_ends, E, p.m, rng);
  }
  const std::vector<float> lhs = random_values(size_t(p.m * p.k), c.activations, rng);
  const std::vector<float> rhs = random_values(size_t(E * p.k * p.n), c.format, rng);
  Context& cx = ctx(c.schedule);
  std::vector<float> got, want;
  if (routed) {
    got = run_gmm_routed(cx, p, lhs, rhs, ids, weights, {}, bias);
    want = reference::gmm_routed(p, lhs, rhs, ids, weights, {}, bias);
  } else {
    got = c.mode == Mode::device_sizes ? run_gmm_device(cx, p, lhs, rhs) : run_gmm(cx, p, lhs, rhs);
    want = reference::gmm(p, lhs, rhs);
  }
  const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
  EXPECT_TRUE(all_close(got, want, tol.atol, tol.rtol));
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantGmm, ::testing::ValuesIn(quant_cases()),
                         [](const ::testing::TestParamInfo<QuantCase>& info) { return case_name(info.param); });

// On CPU devices vkgmm's own buffers are read through texel views (the sweep above); blocks read from the
// storage buffer instead (an app's buffers, or texel loads off) give the same results.
TEST_F(DeviceTest, QuantizedRhsThroughStorageBuffers) {
  ContextOptions o;
  o.texel_loads = false;
  Context cx = make_context(o);
  for (DType format : block_formats())
    for (bool transposed : {true, false}) {
      SCOPED_TRACE(std::string(dtype_name(format)) + (transposed ? " [n, k]" : " [k, n]"));
      std::mt19937 rng(3);
      const int64_t B = int64_t(block_elements(format));
      GmmProblem p;
      p.m = 13, p.transpose_rhs = transposed, p.rhs_type = format;
      p.k = transposed ? B : 12, p.n = transposed ? 10 : B;
      p.group_sizes = make_group_sizes(Sizes::random, 2, p.m, rng);
      const auto lhs = random_values(size_t(p.m * p.k), DType::f32, rng);
      const auto rhs = random_values(size_t(2 * p.k * p.n), format, rng);
      EXPECT_TRUE(all_close(run_gmm(cx, p, lhs, rhs), reference::gmm(p, lhs, rhs), 1e-3, 1e-5));
    }
  for (auto& m : cx.take_validation_messages()) ADD_FAILURE() << m;
}

// Decode through GGUF's [n, k] rows on the direct schedule, which walks K a block at a time (each
// column's block read once): T = 1 .. 8 tokens routed top-2 over E = 4 experts with about a quarter of
// the slots dropped (-1), combined; k of one block (every T) and of five (T = 1, 8); n odd, over one
// 128-column tile with five blocks; five blocks also under a forced 1024-column tiling (more columns
// per invocation). One test per format: each compiles its own pipelines (most of its time), so ctest
// runs them side by side.
class QuantizedDecode : public DeviceTest, public ::testing::WithParamInterface<DType> {};

TEST_P(QuantizedDecode, WalksWholeBlocks) {
  Context& cx = ctx(Schedule::direct);
  const DType format = GetParam();
  for (int64_t blocks : {1, 5})
    for (int64_t T = 1; T <= 8; ++T)
      for (bool wide : {false, true}) {
        // Every T over one block; the ends of T over five and with the wide tile (the test's time).
        if ((blocks > 1 || wide) && T != 1 && T != 8) continue;
        if (wide && blocks == 1) continue;
        SCOPED_TRACE(std::string(dtype_name(format)) + " blocks " + std::to_string(blocks) + " T " +
                     std::to_string(T) + (wide ? " tiling 2,4,1024" : ""));
        std::mt19937 rng(uint32_t(17 + T * 3 + blocks) + uint32_t(format));
        const int64_t E = 4;
        GmmProblem p;
        p.m = T, p.k = blocks * int64_t(block_elements(format)), p.n = blocks == 1 ? 37 : 131;
        p.transpose_rhs = true, p.rhs_type = format;
        p.num_rhs_groups = E;
        p.routing = {2, false, true, E};
        if (wide) p.tiling.fixed = Tiling{2, 4, 1024};
        std::vector<int32_t> ids;
        for (int64_t t = 0; t < T; ++t) {
          const int32_t first = int32_t(rng() % E);
          ids.push_back(rng() % 4 == 0 ? -1 : first);
          ids.push_back(rng() % 4 == 0 ? -1 : int32_t((first + 1 + rng() % (E - 1)) % E));
        }
        const auto weights = random_values(size_t(T * 2), DType::f32, rng);
        const auto lhs = random_values(size_t(p.m * p.k), DType::f32, rng);
        const auto rhs = random_values(size_t(E * p.k * p.n), format, rng);
        const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
        EXPECT_TRUE(all_close(run_gmm_routed(cx, p, lhs, rhs, ids, weights),
                              reference::gmm_routed(p, lhs, rhs, ids, weights, {}, {}), tol.atol, tol.rtol));
      }
}

INSTANTIATE_TEST_SUITE_P(QuantDecode, QuantizedDecode,
                         ::testing::ValuesIn(block_formats()),
                         [](const ::testing::TestParamInfo<DType>& info) { return std::string(dtype_name(info.param)); });

// The block walk reads each block whole from the word holding its first byte (the scale with the quants)
// and, through the texel view, from the texel holding that word: here the blocks sit 256 bytes into a
// buffer of poison (so a walk that lost the view's offset, or placed a run in the wrong texel, reads
// poison), every block start alignment occurs (odd n), and the scales change every block (every 32
// values in the K formats; q4_K's mins too) over several super-blocks, so a scale applied to the wrong
// run, or a q4_K min not taken off, is a wrong sum. Groups of three rows, and the prefill tiling (where
// q4_K scales each value as it decodes it, the other formats each run's sum): groups of 64 rows on
// 32 x 128 tiles, 16 rows x 16 columns per invocation.
TEST_F(DeviceTest, QuantizedWalkScalesEachRunOnce) {
  Context& cx = ctx(Schedule::direct);
  for (DType format : block_formats())
    for (int32_t rows : {3, 64}) {
      SCOPED_TRACE(std::string(dtype_name(format)) + ", groups of " + std::to_string(rows) + " rows");
      std::mt19937 rng(41 + uint32_t(format));
      GmmProblem p;
      p.m = 2 * rows, p.k = 3 * int64_t(block_elements(format)), p.n = rows > 3 ? 131 : 13;
      if (block_elements(format) == 32) p.k = 9 * 32;
      p.transpose_rhs = true, p.rhs_type = format;
      p.group_sizes = {rows, rows};
      // Weights whose blocks differ in scale and offset: a wrong run's scale or min shows.
      std::uniform_real_distribution<float> d(-1.0f, 1.0f);
      std::vector<float> w(size_t(2 * p.n * p.k));
      for (size_t i = 0; i < w.size(); ++i) w[i] = d(rng) * float(1 + (i / 32) % 5) + ((i / 32) % 3 == 0 ? 0.5f : 0.0f);
      const std::vector<uint8_t> blocks = quant::quantize(format, w.data(), w.size());
      quant::dequantize(format, blocks.data(), w.size(), w.data());
      const std::vector<float> lhs = random_values(size_t(p.m * p.k), DType::f32, rng);
      Guarded r(cx, blocks.size());
      r.set(blocks.data(), blocks.size());
      Guarded l = guarded_floats(cx, lhs), o(cx, size_t(p.m * p.n) * 4);
      gmm(cx, p, {l.view(), r.view(), o.view()});
      const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
      EXPECT_TRUE(all_close(floats(o), reference::gmm(p, lhs, w), tol.atol, tol.rtol));
      EXPECT_TRUE(o.guards_intact());
      if (rows > 3) EXPECT_EQ(GmmPlan(cx, p).tiling(), (Tiling{32, 4, 128}));
    }
}

// q4_K's walk takes 64-value steps (two sub-blocks over one chunk of quant bytes: low nibbles, then high)
// and reads each column's super-block head once per 256 values, keeping it across the super-block's four
// steps; 16 rows per invocation scale each value, fewer scale each run's sum (and take the mins off per
// run). Both, against the CPU reference dequantizer: scales and mins that change every sub-block (a pair
// swapped, a head kept too long or refreshed from the wrong super-block, a nibble taken from the wrong
// half is a wrong sum), k of 5 super-blocks, groups and n that are not multiples of the tile, f32 and
// bf16 activations (prefill's), on prefill's 32 x 128 tiles (16 rows per invocation) and 8 x 128 ones.
TEST_F(DeviceTest, QuantizedQ4KWalkSteps64KeepsEachHead) {
  Context& cx = ctx(Schedule::direct);
  std::mt19937 rng(67);
  GmmProblem p;
  p.k = 5 * 256, p.n = 200;
  p.transpose_rhs = true, p.rhs_type = DType::q4_K;
  p.group_sizes = {45, 0, 83, 7};
  p.m = 135;
  // Sub-block j of a row gets the scale 1 + (j * 7) % 11 and the offset ((j * 5) % 9 - 4) / 4: every
  // neighbouring pair of sub-blocks differs in both, and most mins are nonzero.
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> w(size_t(4 * p.n * p.k));
  for (size_t i = 0; i < w.size(); ++i) {
    const size_t j = i / 32;
    w[i] = d(rng) * float(1 + (j * 7) % 11) + float(int((j * 5) % 9) - 4) / 4.0f;
  }
  const std::vector<uint8_t> blocks = quant::quantize(p.rhs_type, w.data(), w.size());
  quant::dequantize(p.rhs_type, blocks.data(), w.size(), w.data());
  Guarded r(cx, blocks.size());
  r.set(blocks.data(), blocks.size());
  for (DType act : {DType::f32, DType::bf16})
    for (bool runs : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(act)) + (runs ? ", 8-row tiles (a run's sum scaled)" : ", 32-row tiles"));
      p.lhs_type = act;
      p.tiling = TilingChoice::of(runs ? Tiling{8, 4, 128} : Tiling{32, 4, 128});
      const std::vector<float> lhs = random_values(size_t(p.m * p.k), act, rng);
      const std::vector<uint8_t> lhs_bytes = encode(act, lhs);
      Guarded l(cx, lhs_bytes.size()), o(cx, size_t(p.m * p.n) * 4);
      l.set(lhs_bytes.data(), lhs_bytes.size());
      gmm(cx, p, {l.view(), r.view(), o.view()});
      const Tolerance tol = tolerance_for(p.lhs_type, p.rhs_type, p.out_type);
      EXPECT_TRUE(all_close(floats(o), reference::gmm(p, lhs, w), tol.atol, tol.rtol));
      EXPECT_TRUE(o.guards_intact());
      EXPECT_TRUE(r.guards_intact());
    }
}

// Adapter fine-tuning through frozen block-format weights: the backward computes d_lhs = d_out @ W (W read
// in the layout the forward did not use: blocks along its rows' contiguous axis either way), no d_rhs;
// with host and device group sizes.
TEST_F(DeviceTest, QuantizedWeightsBackwardGivesDLhsOnly) {
  for (DType format : {DType::q4_0, DType::q6_K, DType::q5_1, DType::q3_K})
    for (bool device : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(format)) + (device ? " device sizes" : " host sizes"));
      std::mt19937 rng(5);
      GmmProblem p;
      p.m = 23, p.k = int64_t(block_elements(format)), p.n = 18;
      p.transpose_rhs = true;  // GGUF's [n, k] rows
      p.rhs_type = format;
      p.group_sizes = make_group_sizes(Sizes::random, 3, p.m, rng);
      const auto lhs = random_values(size_t(p.m * p.k), DType::f32, rng);
      const auto rhs = random_values(size_t(3 * p.k * p.n), format, rng);
      const auto d_out = random_values(size_t(p.m * p.n), DType::f32, rng);
      const GmmBackwardPlan plan(ctx(), p);
      EXPECT_TRUE(plan.frozen_rhs());
      EXPECT_EQ(plan.sizes().d_rhs, 0u);
      expect_invalid_argument([&] { (void)plan.d_rhs_plan(); }, "frozen");
      const reference::Gradients got = device ? run_backward_device(ctx(), p, lhs, rhs, d_out)
                                              : run_backward(ctx(), p, lhs, rhs, d_out);
      EXPECT_TRUE(got.d_rhs.empty());
      EXPECT_TRUE(all_close(got.d_lhs, reference::gmm_backward(p, lhs, rhs, d_out).d_lhs, 1e-3, 1e-5));
    }
}

// The rules of block-format weights, refused when the plan is made or the operands checked.
TEST_F(DeviceTest, QuantizedRhsRules) {
  GmmProblem p;
  p.m = 8, p.k = 48, p.n = 8, p.group_sizes = {8};
  p.transpose_rhs = true;
  p.rhs_type = DType::q8_0;
  expect_invalid_argument([&] { GmmPlan(ctx(), p); }, "must be a multiple of 32");
  p.transpose_rhs = false, p.n = 40;
  expect_invalid_argument([&] { GmmPlan(ctx(), p); }, "n = 40 must be a multiple of 32");
  // Block formats are gmm's rhs only.
  p.n = 32, p.lhs_type = DType::q4_0;
  expect_invalid_argument([&] { GmmPlan(ctx(), p); }, "lhs");
  TgmmProblem t;
  t.m = 8, t.k = 32, t.n = 32, t.group_sizes = {8}, t.rhs_type = DType::q8_0;
  expect_invalid_argument([&] { TgmmPlan(ctx(), t); }, "rhs");
  // The view must start at a binding offset (blocks are addressed from the descriptor's start).
  p.lhs_type = DType::f32;
  const GmmPlan plan(ctx(), p);
  Buffer lhs = ctx().create_buffer(plan.sizes().lhs), out = ctx().create_buffer(plan.sizes().out);
  Buffer rhs = ctx().create_buffer(plan.sizes().rhs + 64);
  expect_invalid_argument([&] { plan.check({lhs.view(), rhs.view(4, plan.sizes().rhs), out.view()}); },
                          "minStorageBufferOffsetAlignment");
  expect_invalid_argument([&] { plan.check({lhs.view(), rhs.view(0, plan.sizes().rhs - 1), out.view()}); },
                          "too small");
}

}  // namespace
}  // namespace vkgmm::test
