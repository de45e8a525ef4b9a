// `vkgmm run --check`: the device's output against vkgmm::reference, within a tolerance that grows as
// fp32 rounding error does: with the length of the sums and with the size of the terms summed.
#pragma once

#include <cstdint>
#include <vector>

#include "vkgmm/types.hpp"

// What the tolerance of one run's output depends on.
struct CheckScale {
  vkgmm::DType lhs = vkgmm::DType::f32, rhs = vkgmm::DType::f32, out = vkgmm::DType::f32;
  int64_t reduction = 0;  // the longest sum behind one element: k for gmm, the largest group's rows for tgmm
  double term = 1;        // the largest |lhs| * |rhs| one term of a sum can be (times the sum of a token's
                          // |weights| when they combine its slots)
};

// The largest |value| of `v` (0 for none); NaN and infinity skipped, --check compares those exactly.
double largest_magnitude(const std::vector<float>& v);

// Prints "check: N elements, max abs error ... (atol A, rtol R): ok|FAILED" on stdout; throws
// std::runtime_error (exit status 1: the run went wrong, not the arguments) naming the first element out
// of tolerance. |got - want| <= atol + rtol * |want|, where atol is tool::tolerance_for's (1e-3, widened by
// sqrt(reduction / 128) past sums of 128 terms) times `term` when that is above 1, and rtol is 1e-5, or
// 1e-2 when lhs, rhs or out is a 16-bit type. Block-format weights decode to exact f32 values: an f32
// product's tolerance. $VKGMM_RUN_PERTURB=1 first adds one term's worth to one element of `got` (a test
// that --check refuses a wrong result).
void check_against(std::vector<float> got, const std::vector<float>& want, const CheckScale& scale);
