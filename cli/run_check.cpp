#include "run_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "tolerance.hpp"

namespace {

bool is_16bit(vkgmm::DType t) { return t == vkgmm::DType::f16 || t == vkgmm::DType::bf16; }

}  // namespace

double largest_magnitude(const std::vector<float>& v) {
  double most = 0;
  for (float x : v)
    if (std::isfinite(x)) most = std::max(most, std::fabs(double(x)));
  return most;
}

void check_against(std::vector<float> got, const std::vector<float>& want, const CheckScale& scale) {
  // A sum's rounding error is a few ulps of its terms per sqrt(length): tolerance_for's atol holds for
  // terms of magnitude 1 (what the bench draws), so it grows with larger ones. Never below it: a small
  // result still gets the documented 1e-3.
  const double term = std::max(1.0, scale.term);
  tool::Tolerance tol =
      tool::tolerance_for(is_16bit(scale.lhs) || is_16bit(scale.rhs) || is_16bit(scale.out), scale.reduction);
  tol.atol *= term;
  if (got.size() != want.size())
    throw vkgmm::Error(vkgmm::Status::internal, "--check: the reference has " + std::to_string(want.size()) +
                                                    " elements, the output " + std::to_string(got.size()));
  if (const char* p = std::getenv("VKGMM_RUN_PERTURB"); p && std::string(p) == "1" && !got.empty())
    got[got.size() / 2] += static_cast<float>(term);
  const tool::Comparison c = tool::compare(got, want, tol);
  std::printf("check: %zu elements, max abs error %.3g (atol %.3g, rtol %g): %s\n", got.size(), c.max_abs_error,
              tol.atol, tol.rtol, c.bad ? "FAILED" : "ok");
  std::fflush(stdout);
  if (c.bad) {
    char msg[256];
    std::snprintf(msg, sizeof msg, "--check: output differs from the reference at flat index %zu: got %.9g, expected %.9g",
                  c.first_bad, static_cast<double>(got[c.first_bad]), static_cast<double>(want[c.first_bad]));
    throw std::runtime_error(msg);
  }
}
