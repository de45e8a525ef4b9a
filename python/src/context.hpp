// vkgmm.Context as Python sees it: one vkgmm::Context shared by every Array and plan made on it.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "vkgmm/context.hpp"

namespace vkgmm_py {

using ContextRef = std::shared_ptr<vkgmm::Context>;

void bind_context(pybind11::module_& m);

}  // namespace vkgmm_py
