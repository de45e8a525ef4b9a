// vkgmm.GmmPlan, TgmmPlan and GmmBackwardPlan: the C++ plans (checked and planned once, run any number of
// times) on vkgmm.Arrays. The waits on the device run with the GIL released.
#pragma once

#include <pybind11/pybind11.h>

namespace vkgmm_py {

void bind_plans(pybind11::module_& m);

}  // namespace vkgmm_py
