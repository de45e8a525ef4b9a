// The exception of `vkgmm run` for a bad command line or a bad input file: exit status 2. Anything else
// that goes wrong (the device, the library, a failed --check) is status 1.
#pragma once

#include <stdexcept>

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
