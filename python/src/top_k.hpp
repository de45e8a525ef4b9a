// vkgmm.top_k: top-k routing of router logits on the device (vkgmm::TopKPlan), and its backward
// (vkgmm::TopKBackwardPlan).
#pragma once

#include <pybind11/pybind11.h>

namespace vkgmm_py {

void bind_top_k(pybind11::module_& m);

}  // namespace vkgmm_py
