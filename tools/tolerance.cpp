#include "tolerance.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tool {

Tolerance tolerance_for(bool any_16bit, int64_t reduction) {
  return {1e-3 * std::sqrt(std::max<double>(double(reduction), 128.0) / 128.0), any_16bit ? 1e-2 : 1e-5};
}

Comparison compare(const std::vector<float>& got, const std::vector<float>& want, Tolerance tol) {
  Comparison c;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double g = got[i], w = want[i];
    double err;
    bool ok;
    if (std::isnan(g) || std::isnan(w)) {
      ok = std::isnan(g) && std::isnan(w);
      err = ok ? 0 : std::numeric_limits<double>::infinity();
    } else if (std::isinf(g) || std::isinf(w)) {
      ok = g == w;
      err = ok ? 0 : std::numeric_limits<double>::infinity();
    } else {
      err = std::fabs(g - w);
      ok = err <= tol.atol + tol.rtol * std::fabs(w);
    }
    c.max_abs_error = std::max(c.max_abs_error, err);
    if (!ok && c.bad++ == 0) c.first_bad = i;
  }
  return c;
}

}  // namespace tool
