// Every GGUF block format vkgmm reads, from the one list (VKGMM_DTYPES): a test that walks this list
// covers a format as soon as its row is added.
#pragma once

#include <vector>

#include "vkgmm/types.hpp"

namespace vkgmm::test {

inline std::vector<DType> block_formats() {
  const auto formats = vkgmm::block_formats();
  return std::vector<DType>(formats.begin(), formats.end());
}

// Every type: the element types, then the block formats.
inline std::vector<DType> all_dtypes() {
  std::vector<DType> out;
#define VKGMM_TEST_DTYPE_(name, NAME, value, values, bytes, ggml) out.push_back(DType::name);
  VKGMM_DTYPES(VKGMM_TEST_DTYPE_)
#undef VKGMM_TEST_DTYPE_
  return out;
}

}  // namespace vkgmm::test
