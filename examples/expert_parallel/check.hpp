// A result against the single-process reference, with the rule `vkgmm run --check` and the bench apply:
// |got - want| <= atol + rtol * |want|, rtol 1e-5 (f32 throughout), atol 1e-3 widened past sums of 128
// terms by sqrt(terms / 128), as fp32 rounding error grows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ep {

struct Agreement {
  size_t values = 0, bad = 0;
  double max_error = 0;  // infinite where a NaN or an infinity stands
  bool ok() const { return bad == 0; }
};

// `terms`: the length of the longest sum behind one value.
Agreement agree(const std::vector<float>& got, const std::vector<double>& want, int64_t terms);

}  // namespace ep
