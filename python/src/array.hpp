// vkgmm.Array: an operand in a device buffer, uploaded once and reused across calls (expert weights),
// read back with .numpy().
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "context.hpp"
#include "vkgmm/types.hpp"

namespace vkgmm_py {

struct Array {
  ContextRef ctx;
  vkgmm::Buffer buffer;
  std::vector<int64_t> shape;  // the values' shape; a block format's is [experts, n, k] (blocks along k)
  vkgmm::DType dtype = vkgmm::DType::f32;
  uint64_t bytes = 0;          // the stored bytes (a block format: whole blocks)

  // What plans bind: exactly the stored bytes (the whole, padded buffer when there are none).
  vkgmm::BufferView view() const;
  uint64_t elements() const;
};

// A new Array on ctx holding `bytes` bytes (the device buffer at least one word: Vulkan has no empty one).
Array make_array(ContextRef ctx, std::vector<int64_t> shape, vkgmm::DType dtype);
// The bytes of a C-contiguous numpy array copied into `a`, which they must fill exactly.
void upload(Array& a, const pybind11::array& data, const char* what);

void bind_array(pybind11::module_& m);

}  // namespace vkgmm_py
