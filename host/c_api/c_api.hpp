// The C API's handles and its one error path (internal): every entry point runs its body through
// guarded(), so no exception crosses into C and each failure leaves a status and a message.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "../context_impl.hpp"
#include "vkgmm/moe_layer.hpp"
#include "vkgmm/ops.hpp"
#include "vkgmm/top_k.hpp"
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
#define VKGMM_C_PLAN(c_name, Plan)               \
  struct VKGMM_HIDDEN c_name {                   \
    Plan plan;                                   \
    std::shared_ptr<vkgmm::Context::Impl> owner; \
  };
VKGMM_C_PLAN(vkgmm_gmm_plan, vkgmm::GmmPlan)
VKGMM_C_PLAN(vkgmm_tgmm_plan, vkgmm::TgmmPlan)
VKGMM_C_PLAN(vkgmm_gmm_backward_plan, vkgmm::GmmBackwardPlan)
VKGMM_C_PLAN(vkgmm_top_k_plan, vkgmm::TopKPlan)
VKGMM_C_PLAN(vkgmm_moe_layer_plan, vkgmm::MoeLayerPlan)
VKGMM_C_PLAN(vkgmm_top_k_backward_plan, vkgmm::TopKBackwardPlan)
#undef VKGMM_C_PLAN

namespace vkgmm::c_api {

void clear_error() noexcept;
vkgmm_status set_error(vkgmm_status status, const char* message) noexcept;
// `message` with the C++ API's names of fields and calls replaced by the C API's (errors.cpp's table).
std::string c_names(std::string message);
vkgmm_status to_c(Status s) noexcept;
Status from_c(vkgmm_status s) noexcept;

// Throws Error(invalid_argument) naming `what` when p is null.
void require(const void* p, const char* what);

// ----- growing structs (vkgmm.h, "Growing structs") -------------------------------------------------------
// The smallest struct_size accepted for T: its size when it was first published. All are 0.1's; when a
// field is appended to one, specialise this to the old size (offsetof(T, new_field)).
// No C struct ends in padding: a field appended later then starts at the old sizeof, so struct_size tells
// old callers from new ones (a field placed in tail padding would hide behind an unchanged size).
#define VKGMM_NO_TAIL_PADDING(T, last) \
  static_assert(sizeof(T) == offsetof(T, last) + sizeof(T::last), #T " ends in padding: add a reserved field")
VKGMM_NO_TAIL_PADDING(vkgmm_context_options, reserved_end);
VKGMM_NO_TAIL_PADDING(vkgmm_borrowed_device, reserved_tail);
VKGMM_NO_TAIL_PADDING(vkgmm_device_requirements, matrix_extension);
VKGMM_NO_TAIL_PADDING(vkgmm_device_info, timestamp_period_ns);
VKGMM_NO_TAIL_PADDING(vkgmm_gmm_problem, reserved_tail);
VKGMM_NO_TAIL_PADDING(vkgmm_tgmm_problem, expected_group_rows);
VKGMM_NO_TAIL_PADDING(vkgmm_operand_sizes, workspace);
VKGMM_NO_TAIL_PADDING(vkgmm_gmm_operands, bias);
VKGMM_NO_TAIL_PADDING(vkgmm_tgmm_operands, status);
VKGMM_NO_TAIL_PADDING(vkgmm_gmm_backward_operands, pre_activation);
VKGMM_NO_TAIL_PADDING(vkgmm_gmm_backward_sizes, pre_activation);
VKGMM_NO_TAIL_PADDING(vkgmm_gmm_backward_options, reserved_tail);
VKGMM_NO_TAIL_PADDING(vkgmm_top_k_problem, reserved_tail);
VKGMM_NO_TAIL_PADDING(vkgmm_top_k_operands, weights);
VKGMM_NO_TAIL_PADDING(vkgmm_top_k_sizes, weights);
VKGMM_NO_TAIL_PADDING(vkgmm_top_k_backward_options, reserved);
VKGMM_NO_TAIL_PADDING(vkgmm_top_k_backward_operands, d_logits);
VKGMM_NO_TAIL_PADDING(vkgmm_top_k_backward_sizes, d_logits);
VKGMM_NO_TAIL_PADDING(vkgmm_moe_layer_problem, forward_only);
VKGMM_NO_TAIL_PADDING(vkgmm_moe_layer_operands, status);
VKGMM_NO_TAIL_PADDING(vkgmm_moe_layer_gradients, d_b_down);
VKGMM_NO_TAIL_PADDING(vkgmm_moe_layer_sizes, workspace);
#undef VKGMM_NO_TAIL_PADDING

template <typename T>
inline constexpr size_t first_size = sizeof(T);
// Grown by the device group sizes: a caller built against the vkgmm.h before them passes the old size
// and gets the host path (its zero views, its zero counts). Grown again by routing and the epilogue
// (vkgmm_gmm_problem from top_k, vkgmm_gmm_operands from ids), which leaves the first published sizes as
// they were: a caller of either older vkgmm.h gets no routing and no epilogue.
#define VKGMM_GROWN_AT(T, first_new_field) \
  template <>                             \
  inline constexpr size_t first_size<T> = offsetof(T, first_new_field)
VKGMM_GROWN_AT(vkgmm_gmm_problem, device_group_count);
VKGMM_GROWN_AT(vkgmm_tgmm_problem, device_group_count);
VKGMM_GROWN_AT(vkgmm_operand_sizes, workspace);
VKGMM_GROWN_AT(vkgmm_gmm_operands, group_sizes);
VKGMM_GROWN_AT(vkgmm_tgmm_operands, group_sizes);
VKGMM_GROWN_AT(vkgmm_gmm_backward_operands, group_sizes);
VKGMM_GROWN_AT(vkgmm_gmm_backward_sizes, workspace);
// Grown by the device grid switch: an older caller's options take the automatic grid.
VKGMM_GROWN_AT(vkgmm_context_options, device_grid);
// Grown by the matrix units: an older caller's borrowed device uses none, and its requirements say nothing
// of them.
VKGMM_GROWN_AT(vkgmm_borrowed_device, matrix_units);
VKGMM_GROWN_AT(vkgmm_device_requirements, matrix_extension);
// Grown by the down projection's own weight type: an older caller's layer takes weight_type for both.
VKGMM_GROWN_AT(vkgmm_moe_layer_problem, has_down_weight_type);
#undef VKGMM_GROWN_AT

// The C status bits are the C++ ones.
static_assert(VKGMM_DEVICE_STATUS_NEGATIVE_SIZE == device_status::negative_size);
static_assert(VKGMM_DEVICE_STATUS_SUM_ABOVE_M == device_status::sum_above_m);
static_assert(VKGMM_DEVICE_STATUS_VISITS_CUT == device_status::visits_cut);
static_assert(VKGMM_DEVICE_STATUS_BAD_ID == device_status::bad_id);
static_assert(VKGMM_DEVICE_STATUS_BAD_ROUTING == device_status::bad_routing);
// The C activations are the C++ ones: both enums are made from VKGMM_ACTIVATIONS (vkgmm/vocabulary.h).

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
TopKProblem to_cpp(const vkgmm_top_k_problem& problem);
TopKBackwardOptions to_cpp(const vkgmm_top_k_backward_options& options);
MoeLayerProblem to_cpp(const vkgmm_moe_layer_problem& problem);
// The C operands (read with read_struct) as the C++ operands.
GmmOperands to_cpp(const vkgmm_gmm_operands& ops);
TgmmOperands to_cpp(const vkgmm_tgmm_operands& ops);

template <class F>
vkgmm_status guarded(F&& body) noexcept {
  clear_error();
  try {
    body();
    clear_error();  // a nested call the body made (a tiling or record callback's) may have failed
    return VKGMM_OK;
  } catch (const Error& e) {
    try {
      return set_error(to_c(e.status()), c_names(e.what()).c_str());
    } catch (...) {
      return set_error(to_c(e.status()), e.what());  // no memory to rename: the C++ names
    }
  } catch (const std::bad_alloc&) {
    return set_error(VKGMM_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return set_error(VKGMM_INTERNAL, e.what());
  } catch (...) {
    return set_error(VKGMM_INTERNAL, "unknown exception");
  }
}

[[noreturn]] inline void bad(const char* op, const std::string& what) {
  throw vkgmm::Error(vkgmm::Status::invalid_argument, std::string(op) + ": " + what);
}

// The int a C caller stored in an enum field. C lets any int sit there; in C++ loading a value of the enum
// type outside the enumerators' range is undefined behaviour (UBSan reports it), so read the bytes.
template <typename E>
inline int raw_enum(const E& field) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &field, sizeof v);
  return v;
}

inline vkgmm::BufferView view(const vkgmm_buffer_view& v) { return {v.buffer, v.offset, v.size}; }
// A C tri-state (0: the default; > 0 on; < 0 off) as an unset or set C++ option.
inline std::optional<bool> tri_state(int v) {
  if (v == 0) return std::nullopt;
  return v > 0;
}

// Any vkgmm_dtype passes (the values are vkgmm::DType's, static_asserted in errors.cpp); which operand may
// have which type (block formats: rhs only) is the plan's rule, checked there.
inline vkgmm::DType dtype(const char* op, const char* name, const vkgmm_dtype& field) {
  const int t = raw_enum(field);
  if (t < 0 || !vkgmm::is_known(static_cast<vkgmm::DType>(t))) bad(op, std::string(name) + " = " + std::to_string(t) + " is not a vkgmm_dtype");
  return static_cast<vkgmm::DType>(t);
}

inline Activation activation(const char* op, const vkgmm_activation& field) {
  const int a = raw_enum(field);
  if (a < 0 || !is_known(static_cast<Activation>(a)))
    bad(op, "activation = " + std::to_string(a) + " is not a vkgmm_activation");
  return static_cast<Activation>(a);
}

// *_run refuses a context the plan was not made on.
inline void same_context(const vkgmm_context* ctx, const std::shared_ptr<vkgmm::Context::Impl>& owner) {
  require(ctx, "ctx");
  if (vkgmm::ContextInternals::shared(ctx->ctx) != owner)
    throw Error(Status::invalid_argument, "ctx: the plan was created on another context");
}

// A plan's handle from make(cpp_context), which reads the C structs and makes the C++ plan; the handle shares
// the context's ownership (same_context).
template <typename Handle, typename Make>
vkgmm_status create_plan_with(vkgmm_context* ctx, Handle** out, Make make) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    require(ctx, "ctx");
    *out = new Handle{make(ctx->ctx), vkgmm::ContextInternals::shared(ctx->ctx)};
  });
}

// A plan's sizes as the C struct to_c(plan) makes, written to out (a `type_name`).
template <typename Handle, typename CSizes, typename ToC>
vkgmm_status plan_sizes_as(const Handle* plan, CSizes* out, const char* type_name, ToC to_c) {
  return guarded([&] {
    require(plan, "plan");
    write_struct(out, to_c(plan->plan), "out", type_name);
  });
}

// A C choice field as its C++ choice: both enums are made from one list of vkgmm/vocabulary.h, so the
// values are the same; a number the list lacks is refused, naming the field and its C type.
template <typename C, typename E, size_t N>
E choice(const char* op, const char* name, const char* c_type, const C& field, const NamedChoice<E> (&rows)[N]) {
  const int v = raw_enum(field);
  if (!choice_name(rows, static_cast<E>(v))) bad(op, std::string(name) + " = " + std::to_string(v) + " is not a " + c_type);
  return static_cast<E>(v);
}
inline vkgmm::Schedule schedule(const char* op, const vkgmm_schedule& field) {
  return choice(op, "schedule", "vkgmm_schedule", field, vkgmm::kSchedules);
}
inline vkgmm::DeviceGrid device_grid(const char* what, const vkgmm_device_grid& field) {
  return choice(what, "device_grid", "vkgmm_device_grid", field, vkgmm::kDeviceGrids);
}
inline vkgmm::Grid grid(const char* what, const vkgmm_grid& field) {
  return choice(what, "grid", "vkgmm_grid", field, vkgmm::kGrids);
}

}  // namespace vkgmm::c_api
