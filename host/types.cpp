// Names and sizes of the vocabulary types in types.hpp.
#include "vkgmm/types.hpp"

#include "vkgmm/ops.hpp"

#include <string>

namespace vkgmm {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
  }
  // An enum value outside the list can only come from a cast; refuse it rather than size a buffer by 0.
  throw Error(Status::invalid_argument, "unknown element type " + std::to_string(static_cast<uint32_t>(t)));
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
  }
  // Used while building error messages, so it must not throw itself.
  return "unknown";
}

std::optional<DType> parse_dtype(std::string_view name) {
  // The short names are canonical (dtype_name prints them); the NumPy/JAX spellings are accepted too
  // because users copy them from Python.
  if (name == "f32" || name == "float32") return DType::f32;
  if (name == "f16" || name == "float16") return DType::f16;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  return std::nullopt;
}

const char* status_name(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::invalid_argument: return "invalid_argument";
    case Status::unsupported: return "unsupported";
    case Status::out_of_memory: return "out_of_memory";
    case Status::device_lost: return "device_lost";
    case Status::vulkan_error: return "vulkan_error";
    case Status::validation: return "validation";
    case Status::internal: return "internal";
  }
  return "unknown";
}

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::none: return "none";
    case Activation::swiglu: return "swiglu";
  }
  return "unknown";
}

}  // namespace vkgmm
