// libFuzzer driver for the GGUF reader (built with -DVKGMM_FUZZ=ON and clang; see scripts/fuzz.sh).
#include <cstdio>
#include <cstdlib>

#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string violation = vkgmm::fuzz::gguf_one(data, size);
  if (!violation.empty()) {
    std::fprintf(stderr, "gguf invariant violated: %s\n", violation.c_str());
    std::abort();  // libFuzzer saves the input as a crash
  }
  return 0;
}
