// The C API's handles and its one error path (internal): every entry point runs its body through
// guarded(), so no exception crosses into C and each failure leaves a status and a message.
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "vkgmm/ops.hpp"
#include "vkgmm/vkgmm.h"

// Hidden like everything internal; said explicitly so that a test including this header (built with default
// visibility) sees the same as the library.
struct VKGMM_HIDDEN vkgmm_context {
  vkgmm::Context ctx;
};

struct VKGMM_HIDDEN vkgmm_buffer {
  vkgmm::Buffer buffer;
};

// Plans remember their context's device, so *_run can refuse a context the plan was not made on.
struct VKGMM_HIDDEN vkgmm_gmm_plan {
  vkgmm::GmmPlan plan;
  std::shared_ptr<vkgmm::Context::Impl> owner;
};

struct VKGMM_HIDDEN vkgmm_tgmm_plan {
  vkgmm::TgmmPlan plan;
  std::shared_ptr<vkgmm::Context::Impl> owner;
};

struct VKGMM_HIDDEN vkgmm_gmm_backward_plan {
  vkgmm::GmmBackwardPlan plan;
  std::shared_ptr<vkgmm::Context::Impl> owner;
};

namespace vkgmm::c_api {

void clear_error() noexcept;
vkgmm_status set_error(vkgmm_status status, const char* message) noexcept;
vkgmm_status to_c(Status s) noexcept;
Status from_c(vkgmm_status s) noexcept;

// Throws Error(invalid_argument) naming `what` when p is null.
void require(const void* p, const char* what);

// ----- growing structs (vkgmm.h, "Growing structs") -------------------------------------------------------
// The smallest struct_size accepted for T: its size when it was first published. All are 0.1's; when a
// field is appended to one, specialise this to the old size (offsetof(T, new_field)).
template <typename T>
inline constexpr size_t first_size = sizeof(T);

// Throws unless `size` (the caller's struct_size of a `type`, this library's being `known`) is at least
// `first`, and, when larger than `known`, every byte of `bytes` from `known` to `size` is zero.
void check_struct_size(const char* what, const char* type, size_t size, size_t known, size_t first,
                       const void* bytes);

// The caller's *in as this library's T: the fields it has, defaults (zero) for the rest.
template <typename T>
T read_struct(const T* in, const char* what, const char* type) {
  require(in, what);
  check_struct_size(what, type, in->struct_size, sizeof(T), first_size<T>, in);
  T copy{};
  std::memcpy(static_cast<void*>(&copy), in, std::min(in->struct_size, sizeof(T)));
  copy.struct_size = sizeof(T);
  return copy;
}

// `value` into the caller's *out, up to its struct_size (which stays): zero past what this library knows.
template <typename T>
void write_struct(T* out, T value, const char* what, const char* type) {
  require(out, what);
  const size_t size = out->struct_size;
  check_struct_size(what, type, size, sizeof(T), first_size<T>, nullptr);
  value.struct_size = size;
  std::memcpy(static_cast<void*>(out), &value, std::min(size, sizeof(T)));
  if (size > sizeof(T)) std::memset(reinterpret_cast<unsigned char*>(out) + sizeof(T), 0, size - sizeof(T));
}

// The C problems as the C++ problems they stand for (what the plans are made from).
GmmProblem to_cpp(const vkgmm_gmm_problem& problem);
TgmmProblem to_cpp(const vkgmm_tgmm_problem& problem);

template <class F>
vkgmm_status guarded(F&& body) noexcept {
  clear_error();
  try {
    body();
    return VKGMM_OK;
  } catch (const Error& e) {
    return set_error(to_c(e.status()), e.what());
  } catch (const std::bad_alloc&) {
    return set_error(VKGMM_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return set_error(VKGMM_INTERNAL, e.what());
  } catch (...) {
    return set_error(VKGMM_INTERNAL, "unknown exception");
  }
}

}  // namespace vkgmm::c_api
