// Names and sizes of the vocabulary types in types.hpp.
#include <cstring>
#include "vkgmm/types.hpp"

#include "interface.hpp"
#include "vkgmm/ops.hpp"

#include <string>

namespace vkgmm {

namespace {

// GGUF's block formats: values per block and bytes per block (ggml's block_q8_0 {half d; int8 qs[32]},
// block_q4_0 {half d; uint8 qs[16]}, block_q4_K {half d, dmin; uint8 scales[12], qs[128]}, block_q6_K
// {uint8 ql[128], qh[64]; int8 scales[16]; half d}, block_mxfp4 {uint8 e; uint8 qs[16]}).
// The sizes are interface.h's table, which the shaders read too.
struct BlockFormat {
  DType type;
  size_t elements, bytes, step;
};
constexpr BlockFormat kBlockFormats[] = {
#define VKGMM_HOST_BLOCK_FORMAT(t, values, bytes, step, scale) {DType(t), values, bytes, step},
    VKGMM_BLOCK_FORMATS(VKGMM_HOST_BLOCK_FORMAT)
#undef VKGMM_HOST_BLOCK_FORMAT
};
static_assert(uint32_t(DType::q8_0) == VKGMM_DT_Q8_0 && uint32_t(DType::mxfp4) == VKGMM_DT_MXFP4);

const char* block_name(DType t) {
  switch (t) {
    case DType::q8_0: return "q8_0";
    case DType::q4_0: return "q4_0";
    case DType::q4_K: return "q4_K";
    case DType::q6_K: return "q6_K";
    case DType::mxfp4: return "mxfp4";
    default: return nullptr;
  }
}

const BlockFormat* block_format(DType t) {
  for (const BlockFormat& f : kBlockFormats)
    if (f.type == t) return &f;
  return nullptr;
}

// An enum value outside the list can only come from a cast; refuse it rather than size a buffer by 0.
[[noreturn]] void unknown_type(DType t) {
  throw Error(Status::invalid_argument, "unknown element type " + std::to_string(static_cast<uint32_t>(t)));
}

}  // namespace

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    default: break;
  }
  if (const BlockFormat* f = block_format(t))
    throw Error(Status::invalid_argument, std::string(block_name(t)) + " is a block format: " +
                                              std::to_string(f->bytes) + " bytes per block of " +
                                              std::to_string(f->elements) + " values, no size per element");
  unknown_type(t);
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    default: break;
  }
  if (block_format(t)) return block_name(t);
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
  for (const BlockFormat& f : kBlockFormats)
    if (lower(name) == lower(block_name(f.type))) return f.type;
  return std::nullopt;
}

bool is_quantized(DType t) { return block_format(t) != nullptr; }

size_t block_elements(DType t) {
  if (const BlockFormat* f = block_format(t)) return f->elements;
  dtype_size(t);  // throws for a value that is no type
  return 1;
}

size_t block_walk_step(DType t) {
  const BlockFormat* f = block_format(t);
  return f ? f->step : 4;
}

size_t block_bytes(DType t) {
  if (const BlockFormat* f = block_format(t)) return f->bytes;
  return dtype_size(t);
}

uint64_t storage_bytes(DType t, uint64_t count) {
  const uint64_t per = block_elements(t);
  if (count % per != 0)
    throw Error(Status::invalid_argument, std::to_string(count) + " values of " + dtype_name(t) +
                                              " are not whole blocks of " + std::to_string(per));
  return count / per * block_bytes(t);
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
