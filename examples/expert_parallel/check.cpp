#include "check.hpp"

#include <algorithm>
#include <cmath>

namespace ep {

Agreement agree(const std::vector<float>& got, const std::vector<double>& want, int64_t terms) {
  const double rtol = 1e-5, atol = 1e-3 * std::sqrt(std::max(1.0, double(terms) / 128));
  Agreement a;
  a.values = want.size();
  if (got.size() != want.size()) {
    a.bad = std::max(got.size(), want.size());
    a.max_error = INFINITY;
    return a;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - want[i]);
    if (!(err <= atol + rtol * std::fabs(want[i]))) ++a.bad;  // NaN fails
    a.max_error = std::max(a.max_error, std::isfinite(err) ? err : INFINITY);
  }
  return a;
}

}  // namespace ep
