// Where each product of the matrix schedule came from: one operand's rows (or columns) are unit vectors
// and the other's values name their own place (exact integers in f16), so every output element is one
// element of the other operand, exact. A wrong element is reported as the place it was read from, which
// tells a transposed fragment, a stride or offset in the wrong units, or another subgroup's block apart
// from wrong arithmetic, on a driver where the matrix builds disagree with the reference (NVIDIA's:
// docs/gpu-results.md). Each extension's build (ContextOptions::matrix_extension), both rhs layouts.
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "matrix_harness.hpp"

namespace vkgmm::test {
namespace {

constexpr int64_t kM = 64, kK = 32, kN = 64;

// Which operand holds the unit vectors: lhs's rows (each picks a row k of rhs), or rhs's columns (each
// picks a column k of lhs).
enum class Unit { lhs_rows, rhs_columns };

// The k that row i (Unit::lhs_rows) or column n (Unit::rhs_columns) picks: every k, in a scattered order.
int64_t picked_k(Unit u, int64_t at) { return u == Unit::lhs_rows ? (5 * at + 3) % kK : (3 * at + 1) % kK; }

struct Operands {
  std::vector<float> lhs, rhs;  // lhs [m, k]; rhs in the problem's layout ([k, n], or [n, k] transposed)
};

Operands operands(Unit u, bool transpose) {
  Operands o;
  o.lhs.resize(kM * kK);
  o.rhs.resize(kK * kN);
  for (int64_t i = 0; i < kM; ++i)
    for (int64_t k = 0; k < kK; ++k)
      o.lhs[i * kK + k] = u == Unit::lhs_rows ? float(k == picked_k(u, i)) : float(i * kK + k);
  for (int64_t k = 0; k < kK; ++k)
    for (int64_t n = 0; n < kN; ++n)
      o.rhs[transpose ? n * kK + k : k * kN + n] = u == Unit::lhs_rows ? float(k * kN + n) : float(k == picked_k(u, n));
  return o;
}

// The place a value names: rhs (k, n) for unit lhs rows, lhs (i, k) for unit rhs columns.
std::string place_of(Unit u, float v) {
  const int64_t iv = int64_t(v);
  if (float(iv) != v || iv < 0 || iv >= kK * kN) return "no single element (" + std::to_string(v) + ")";
  return u == Unit::lhs_rows ? "rhs[k " + std::to_string(iv / kN) + ", n " + std::to_string(iv % kN) + "]"
                             : "lhs[i " + std::to_string(iv / kK) + ", k " + std::to_string(iv % kK) + "]";
}

// The report of every output element that is not the one element it should be, the first 16 by place.
std::string misplaced(Unit u, const std::vector<float>& got) {
  std::ostringstream s;
  int wrong = 0;
  for (int64_t i = 0; i < kM; ++i)
    for (int64_t n = 0; n < kN; ++n) {
      const float want = u == Unit::lhs_rows ? float(picked_k(u, i) * kN + n) : float(i * kK + picked_k(u, n));
      const float v = got[i * kN + n];
      if (v == want) continue;
      if (wrong++ < 16)
        s << "\n  out[" << i << ", " << n << "] holds " << place_of(u, v) << ", not " << place_of(u, want);
    }
  if (wrong == 0) return {};
  return std::to_string(wrong) + " of " + std::to_string(kM * kN) + " elements misplaced:" + s.str();
}

TEST_F(MatrixTest, UnitOperandsShowWhereEachProductCameFrom) {
  int ran = 0;
  for (const char* extension : {"VK_KHR_cooperative_matrix", "VK_NV_cooperative_matrix"}) {
    ContextOptions o;
    o.matrix_extension = extension;
    Context c = make_context(o);
    if (c.info().matrix_extension.empty()) continue;  // no build of it here, or the device lacks it
    // The automatic block, and blocks of 32 x 32 over two K steps of 16.
    for (const std::optional<Tiling>& tiling : {std::optional<Tiling>(), std::optional<Tiling>(Tiling{32, 16, 32})})
    for (bool transpose : {false, true})
      for (Unit u : {Unit::lhs_rows, Unit::rhs_columns}) {
        SCOPED_TRACE(std::string(extension) + (transpose ? ", rhs [n, k]" : ", rhs [k, n]") +
                     (u == Unit::lhs_rows ? ", unit lhs rows" : ", unit rhs columns") +
                     (tiling ? ", 32 x 16 x 32 tiles" : ", automatic tiles"));
        GmmProblem p;
        p.m = kM;
        p.k = kK;
        p.n = kN;
        p.group_sizes = {kM};
        p.transpose_rhs = transpose;
        p.lhs_type = p.rhs_type = DType::f16;
        p.schedule = Schedule::matrix;
        if (tiling) p.tiling = TilingChoice::of(*tiling);
        ASSERT_TRUE(runs_on_matrix_units(GmmPlan(c, p)));
        const Operands in = operands(u, transpose);
        // The reference agrees with the places the report names (it is the premise of the report).
        const std::vector<float> want = reference::gmm(p, in.lhs, in.rhs, {});
        const std::string premise = misplaced(u, want);
        ASSERT_TRUE(premise.empty()) << "the reference: " << premise;
        const std::vector<float> got = run_gmm(c, p, in.lhs, in.rhs, {});
        ASSERT_EQ(got.size(), want.size());
        const std::string report = misplaced(u, got);
        EXPECT_TRUE(report.empty()) << report;
      }
    ++ran;
  }
  EXPECT_GE(ran, 1);  // the fixture runs only where the default context has matrix units
}

}  // namespace
}  // namespace vkgmm::test
