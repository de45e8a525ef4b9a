// vkgmm's errors as Python exceptions, and the parsers of names that raise them.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "vkgmm/ops.hpp"
#include "vkgmm/types.hpp"

namespace vkgmm_py {

// Registers vkgmm.ContractError (a ValueError: the input breaks a rule of the contract, or the device
// cannot run it) and vkgmm.DeviceError (a RuntimeError: out of memory, device lost, a Vulkan error, a
// validation message), each carrying vkgmm's message and its status name in `.status`, and translates
// vkgmm::Error into them.
void bind_errors(pybind11::module_& m);

// Throws vkgmm.ContractError with this message (for the binding's own argument checks).
[[noreturn]] void contract_error(const std::string& message);

// A type's name ("f32", "q8_0", ...) as the DType, else ContractError naming `what`.
vkgmm::DType dtype_of(const std::string& name, const char* what);
// activation=: None (none) or an activation's name, else ContractError (an unknown name) or TypeError
// (not a str), naming the argument.
vkgmm::Activation activation_of(const pybind11::object& activation);

}  // namespace vkgmm_py
