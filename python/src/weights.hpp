// Quantized expert weights: GGUF's block formats made from floats (vkgmm::quant, the library's quantizers),
// widened back to floats, and expert tensors read from GGUF files (formats/gguf.*, the reader the CLI uses too).
#pragma once

#include <pybind11/pybind11.h>

namespace vkgmm_py {

void bind_weights(pybind11::module_& m);

}  // namespace vkgmm_py
