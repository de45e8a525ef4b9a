// vkgmm's errors as Python exceptions.
#pragma once

#include <pybind11/pybind11.h>

namespace vkgmm_py {

// Registers vkgmm.ContractError (a ValueError: the input breaks a rule of the contract, or the device
// cannot run it) and vkgmm.DeviceError (a RuntimeError: out of memory, device lost, a Vulkan error, a
// validation message), each carrying vkgmm's message and its status name in `.status`, and translates
// vkgmm::Error into them.
void bind_errors(pybind11::module_& m);

// Throws vkgmm.ContractError with this message (for the binding's own argument checks).
[[noreturn]] void contract_error(const std::string& message);

}  // namespace vkgmm_py
