// C API: status names, the thread-local error message, the version.
#include <cstring>
#include <string>
#include <utility>

#include "c_api.hpp"
#include "vkgmm/internals.hpp"

namespace vkgmm::c_api {

namespace {
// Per thread, so concurrent callers each see their own last failure.
thread_local std::string last_message;
}  // namespace

// The library's messages name the C++ API's fields and calls; a C caller knows them by the names
// vkgmm.h gives them. Longer phrases first: each replaces every occurrence, in order.
constexpr internals::NameSwap kCNames[] = {
    {"Routing::top_k", "top_k"},
    {"Routing::combine", "combine"},
    {"or ids (Routing)", "or ids (top_k)"},
    {"routing: group_offset", "group_offset"},
    {"routing: num_experts", "num_experts"},
    {"routing: T * top_k", "T * top_k"},
    {"routing.top_k", "top_k"},
    {"routing.combine", "combine"},
    {"routing.lhs_per_slot", "lhs_per_slot"},
    {"routing.num_experts", "num_experts"},
    {"Epilogue::bias", "bias"},
    {"epilogue.activation", "activation"},
    {"epilogue.save_pre_activation", "save_pre_activation"},
    {"epilogue.bias", "bias"},
    {"num_rhs_groups (rhs.shape[0])", "num_rhs_groups"},
    {"num_rhs_groups (routing's local experts)", "num_rhs_groups"},
    {"device_group_sizes.count", "device_group_count"},
    {"device_group_sizes.expected_rows", "expected_group_rows"},
    {"device_group_sizes:", "device_group_count:"},
    {"out (out_type, Python's preferred_element_type)", "out (out_type)"},
    {"ContextOptions::", "vkgmm_context_options."},
    {"ContextOptions.", "vkgmm_context_options."},
    {"BorrowedDevice", "vkgmm_borrowed_device"},
    {"device_requirements(instance, physical_device).matrix_extension",
     "vkgmm_device_requirements_query_instance's matrix_extension"},
    {"DeviceInfo::matrix_extension", "vkgmm_device_info.matrix_extension"},
    {"Context::create_buffer or borrow_buffer", "vkgmm_buffer_create or vkgmm_buffer_borrow"},
    {"Context::create_buffer", "vkgmm_buffer_create"},
    {"Context::max_whole_input_bytes", "vkgmm_context_max_whole_input_bytes"},
    {"create_buffer: ", "vkgmm_buffer_create: "},
    {"borrow_buffer: ", "vkgmm_buffer_borrow: "},
};

void clear_error() noexcept { last_message.clear(); }

namespace {
// The struct whose `workspace` field a message's op reports its workspace size in (its message names
// workspace_bytes()): the op is the message's first word.
const char* workspace_size_field(const std::string& message) {
  if (message.rfind("gmm_backward:", 0) == 0) return "vkgmm_gmm_backward_sizes.workspace";
  if (message.rfind("moe_layer:", 0) == 0) return "vkgmm_moe_layer_sizes.workspace";
  return "vkgmm_operand_sizes.workspace";
}

}  // namespace

std::string c_names(std::string message) {
  message = internals::renamed(std::move(message), kCNames);
  const internals::NameSwap workspace{"workspace_bytes()", workspace_size_field(message)};
  return internals::renamed(std::move(message), &workspace, 1);
}

vkgmm_status set_error(vkgmm_status status, const char* message) noexcept {
  try {
    last_message = message ? message : "";
  } catch (...) {
    last_message.clear();  // no memory for the message: the status still says what happened
  }
  return status;
}

// The C and C++ codes share their numbering; these checks keep it so.
static_assert(int(VKGMM_INVALID_ARGUMENT) == int(Status::invalid_argument));
static_assert(int(VKGMM_UNSUPPORTED) == int(Status::unsupported));
static_assert(int(VKGMM_OUT_OF_MEMORY) == int(Status::out_of_memory));
static_assert(int(VKGMM_DEVICE_LOST) == int(Status::device_lost));
static_assert(int(VKGMM_VULKAN_ERROR) == int(Status::vulkan_error));
static_assert(int(VKGMM_VALIDATION) == int(Status::validation));
static_assert(int(VKGMM_INTERNAL) == int(Status::internal));
// The C dtypes are the C++ ones: both enums are made from VKGMM_DTYPES (vkgmm/vocabulary.h).

vkgmm_status to_c(Status s) noexcept {
  return (s >= Status::ok && s <= Status::internal) ? static_cast<vkgmm_status>(s) : VKGMM_INTERNAL;
}

Status from_c(vkgmm_status s) noexcept {
  return (s >= VKGMM_OK && s <= VKGMM_INTERNAL) ? static_cast<Status>(s) : Status::internal;
}

void require(const void* p, const char* what) {
  if (!p) throw Error(Status::invalid_argument, std::string(what) + " is NULL");
}

void check_struct_size(const char* what, const char* type, size_t size, size_t known, size_t first,
                       const void* bytes) {
  const std::string name = std::string(what) + "->struct_size = " + std::to_string(size);
  if (size == 0)
    throw Error(Status::invalid_argument, name + ": set it to sizeof(" + type + ")");
  if (size < first)
    throw Error(Status::invalid_argument, name + " is less than any " + type + " (" + std::to_string(first) +
                                              " bytes): set it to sizeof(" + type + ")");
  if (!bytes || size <= known) return;
  const auto* tail = static_cast<const unsigned char*>(bytes);
  for (size_t i = known; i < size; ++i) {
    if (tail[i] != 0)
      throw Error(Status::unsupported, name + ": a newer " + type + " with fields this vkgmm (" +
                                           VKGMM_VERSION_STRING + ", " + std::to_string(known) +
                                           " bytes) does not know, set to other than their defaults (byte " +
                                           std::to_string(i) + ")");
  }
}

}  // namespace vkgmm::c_api

extern "C" {

const char* vkgmm_status_string(vkgmm_status status) {
  // A C caller may pass any int: switch on the bytes, not on a (possibly out-of-range) enum value.
  int raw;
  std::memcpy(&raw, &status, sizeof raw);
  switch (raw) {
    case VKGMM_OK: return "VKGMM_OK";
    case VKGMM_INVALID_ARGUMENT: return "VKGMM_INVALID_ARGUMENT";
    case VKGMM_UNSUPPORTED: return "VKGMM_UNSUPPORTED";
    case VKGMM_OUT_OF_MEMORY: return "VKGMM_OUT_OF_MEMORY";
    case VKGMM_DEVICE_LOST: return "VKGMM_DEVICE_LOST";
    case VKGMM_VULKAN_ERROR: return "VKGMM_VULKAN_ERROR";
    case VKGMM_VALIDATION: return "VKGMM_VALIDATION";
    case VKGMM_INTERNAL: return "VKGMM_INTERNAL";
  }
  return "VKGMM_UNKNOWN_STATUS";
}

const char* vkgmm_last_error_message(void) { return vkgmm::c_api::last_message.c_str(); }

const char* vkgmm_version_string(void) { return VKGMM_VERSION_STRING; }

}  // extern "C"
