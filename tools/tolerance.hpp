// Result against reference: the one rule `vkgmm run --check` and `vkgmm bench` use to accept a result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tool {

// An element agrees when |got - want| <= atol + rtol * |want|.
struct Tolerance {
  double atol = 0, rtol = 0;
};

// rtol 1e-5 when everything is f32, 1e-2 when some operand or the output is 16-bit (about one unit in
// the last place of bf16). atol 1e-3, widened past sums of 128 terms by sqrt(reduction / 128): fp32
// rounding error grows about with the square root of the sum's length. reduction = 0 keeps 1e-3.
Tolerance tolerance_for(bool any_16bit, int64_t reduction = 0);

struct Comparison {
  size_t bad = 0;            // elements outside the tolerance
  size_t first_bad = 0;      // index of the first of them (meaningless when bad == 0)
  double max_abs_error = 0;  // infinity where a NaN or an infinity disagrees
};

// Element by element over got.size() == want.size() elements. A NaN agrees only with a NaN and an
// infinity only with the same infinity: a kernel that turns finite sums into NaN must fail, and one that
// reproduces the reference's own NaN or overflow must not.
Comparison compare(const std::vector<float>& got, const std::vector<float>& want, Tolerance tol);

}  // namespace tool
