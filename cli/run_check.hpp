// `vkgmm run --check`: the device's output against vkgmm::reference, with the tolerance the usage text
// documents (atol 1e-3, rtol 1e-5, or 1e-2 when any type is 16-bit; tools/tolerance.hpp).
#pragma once

#include <vector>

// Prints "check: N elements, max abs error ...: ok|FAILED" on stdout; throws std::runtime_error (exit
// status 1: the run went wrong, not the arguments) naming the first element out of tolerance.
void check_against(const std::vector<float>& got, const std::vector<float>& want, bool any_16bit);
