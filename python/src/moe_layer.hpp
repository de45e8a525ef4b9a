// vkgmm._MoeLayerPlan: the MoE layer's plan for vkgmm.moe_layer and moe_layer_vjp (python/vkgmm/_moe.py).
#pragma once

#include <pybind11/pybind11.h>

namespace vkgmm_py {

void bind_moe_layer(pybind11::module_& m);

}  // namespace vkgmm_py
