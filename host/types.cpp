// Names and sizes of the vocabulary types in types.hpp.
#include <cstdint>
#include <cstring>
#include "vkgmm/types.hpp"

#include "interface.hpp"
#include "vkgmm/vkgmm.h"
#include "vkgmm/ops.hpp"

#include <string>

namespace vkgmm {

namespace {

// An enum value outside the list can only come from a cast; refuse it rather than size a buffer by 0.
[[noreturn]] void unknown_type(DType t) {
  throw Error(Status::invalid_argument, "unknown element type " + std::to_string(static_cast<uint32_t>(t)));
}

// VKGMM_DTYPES lists the types in value order, 0 up, so that a type's value indexes its row.
constexpr bool in_value_order() {
  uint32_t next = 0;
  bool ordered = true;
#define VKGMM_DTYPE_IN_ORDER_(name, NAME, value, values, bytes, ggml) ordered = ordered && value == next++;
  VKGMM_DTYPES(VKGMM_DTYPE_IN_ORDER_)
#undef VKGMM_DTYPE_IN_ORDER_
  return ordered;
}
static_assert(in_value_order(), "VKGMM_DTYPES must list the types in value order from 0");

// The type's row of VKGMM_DTYPES: values and bytes per block (1 and the element's bytes for the element
// types); null for a value that is no DType.
struct Sizes {
  size_t values, bytes;
};
const Sizes* sizes_of(DType t) {
#define VKGMM_DTYPE_SIZES_(name, NAME, value, values, bytes, ggml) {values, bytes},
  static constexpr Sizes kSizes[] = {VKGMM_DTYPES(VKGMM_DTYPE_SIZES_)};
#undef VKGMM_DTYPE_SIZES_
  return is_known(t) ? &kSizes[static_cast<uint32_t>(t)] : nullptr;  // in value order (in_value_order)
}

}  // namespace

size_t dtype_size(DType t) {
  const Sizes* s = sizes_of(t);
  if (!s) unknown_type(t);
  if (s->values > 1)
    throw Error(Status::invalid_argument, std::string(dtype_name(t)) + " is a block format: " +
                                              std::to_string(s->bytes) + " bytes per block of " +
                                              std::to_string(s->values) + " values, no size per element");
  return s->bytes;
}

const char* dtype_name(DType t) {
#define VKGMM_DTYPE_NAME_(name, NAME, value, values, bytes, ggml) \
  if (t == DType::name) return #name;
  VKGMM_DTYPES(VKGMM_DTYPE_NAME_)
#undef VKGMM_DTYPE_NAME_
  // Used while building error messages, so it must not throw itself.
  return "unknown";
}

std::optional<DType> parse_dtype(std::string_view name) {
  // The short names are canonical (dtype_name prints them); the NumPy/JAX spellings are accepted too
  // because users copy them from Python.
  if (name == "f32" || name == "float32") return DType::f32;
  if (name == "f16" || name == "float16") return DType::f16;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  // Block formats in any case: GGUF writes Q4_K, ggml q4_K, users q4_k.
  auto lower = [](std::string_view s) {
    std::string l(s);
    for (char& c : l) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return l;
  };
#define VKGMM_DTYPE_PARSE_(name_, NAME, value, values, bytes, ggml) \
  if (values > 1 && lower(name) == lower(#name_)) return DType::name_;
  VKGMM_DTYPES(VKGMM_DTYPE_PARSE_)
#undef VKGMM_DTYPE_PARSE_
  return std::nullopt;
}

bool is_quantized(DType t) {
  const Sizes* s = sizes_of(t);
  return s && s->values > 1;
}

const char* block_format_names() {
  static const std::string names = [] {
    std::string s;
    for (DType t : block_formats()) s += (s.empty() ? "" : ", ") + std::string(dtype_name(t));
    return s;
  }();
  return names.c_str();
}

size_t block_elements(DType t) {
  const Sizes* s = sizes_of(t);
  if (!s) unknown_type(t);
  return s->values;
}

size_t block_bytes(DType t) {
  const Sizes* s = sizes_of(t);
  if (!s) unknown_type(t);
  return s->bytes;
}

uint64_t storage_bytes(DType t, uint64_t count) {
  const uint64_t per = block_elements(t);
  if (count % per != 0)
    throw Error(Status::invalid_argument, std::to_string(count) + " values of " + dtype_name(t) +
                                              " are not whole blocks of " + std::to_string(per));
  const uint64_t blocks = count / per, bytes = block_bytes(t);
  if (blocks > UINT64_MAX / bytes)
    throw Error(Status::invalid_argument, std::to_string(count) + " values of " + dtype_name(t) +
                                              " are more than 2^64 bytes");
  return blocks * bytes;
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
#define VKGMM_ACTIVATION_CASE_(name, NAME, value, gated) \
  if (a == Activation::name) return #name;
  VKGMM_ACTIVATIONS(VKGMM_ACTIVATION_CASE_)
#undef VKGMM_ACTIVATION_CASE_
  return "unknown";
}

std::optional<Activation> activation_of_name(const char* name) {
  if (!name) return std::nullopt;
#define VKGMM_ACTIVATION_PARSE_(name_, NAME, value, gated) \
  if (std::strcmp(name, #name_) == 0) return Activation::name_;
  VKGMM_ACTIVATIONS(VKGMM_ACTIVATION_PARSE_)
#undef VKGMM_ACTIVATION_PARSE_
  return std::nullopt;
}

}  // namespace vkgmm
