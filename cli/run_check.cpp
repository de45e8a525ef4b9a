#include "run_check.hpp"

#include <cstdio>
#include <stdexcept>
#include <string>

#include "tolerance.hpp"
#include "vkgmm/types.hpp"

void check_against(const std::vector<float>& got, const std::vector<float>& want, bool any_16bit) {
  // No widening with the sum's length (reduction 0): the CLI documents one fixed atol.
  const tool::Tolerance tol = tool::tolerance_for(any_16bit);
  if (got.size() != want.size())
    throw vkgmm::Error(vkgmm::Status::internal, "--check: the reference has " + std::to_string(want.size()) +
                                                    " elements, the output " + std::to_string(got.size()));
  const tool::Comparison c = tool::compare(got, want, tol);
  std::printf("check: %zu elements, max abs error %.3g (atol %g, rtol %g): %s\n", got.size(), c.max_abs_error,
              tol.atol, tol.rtol, c.bad ? "FAILED" : "ok");
  std::fflush(stdout);
  if (c.bad) {
    char msg[256];
    std::snprintf(msg, sizeof msg, "--check: output differs from the reference at flat index %zu: got %.9g, expected %.9g",
                  c.first_bad, static_cast<double>(got[c.first_bad]), static_cast<double>(want[c.first_bad]));
    throw std::runtime_error(msg);
  }
}
