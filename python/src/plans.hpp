// vkgmm.GmmPlan, TgmmPlan and GmmBackwardPlan: the C++ plans (checked and planned once, run any number of
// times) on vkgmm.Arrays. The waits on the device run with the GIL released.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>

#include "vkgmm/context.hpp"

namespace vkgmm_py {

// Records with `record` into a one-time command buffer, submits and waits, with the GIL released.
void run(vkgmm::Context& ctx, const std::function<void(VkCommandBuffer)>& record);

void bind_plans(pybind11::module_& m);

}  // namespace vkgmm_py
