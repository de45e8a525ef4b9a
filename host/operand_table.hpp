// The operands of every grouped op, written once (internal): their names, which the op writes, when a
// problem takes them, and the rules between them. The plan core's views (OperandViews), the names errors
// give, the presence and overlap checks and the conversions from the public operand structs (C++ and C)
// all come from this table.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "vkgmm/context.hpp"

namespace vkgmm {

// X(name, written, when): in binding order for the first four (lhs, rhs, out, existing_out), then the
// device group sizes' operands, then gmm's routing and epilogue operands. A written operand may overlap no
// other operand, except existing_out, which may be out itself (check_existing_view). `when` says which
// problems take it (OperandWhen).
#define VKGMM_OPERAND_TABLE(X)              \
  X(lhs, false, bound)                      \
  X(rhs, false, bound)                      \
  X(out, true, bound)                       \
  X(existing_out, false, existing)          \
  X(group_sizes, false, device_sizes)       \
  X(workspace, true, workspace)             \
  X(status, true, device_metadata)          \
  X(ids, false, routed)                     \
  X(weights, false, combined)               \
  X(bias, false, bias)

// Which problems take an operand: each given view is checked against the plan (check_operand_presence).
enum class OperandWhen {
  bound,            // every problem; a null view of one the kernel reads is refused where it is bound
  existing,         // exactly the problems with existing_out
  device_sizes,     // group sizes on the device, unrouted (a routed problem's sizes are the ids' counts)
  device_metadata,  // group sizes on the device, routed or not; optional (the plan's own otherwise)
  workspace,        // a plan with a workspace (workspace_bytes() > 0); optional (the plan's own otherwise),
                    // except on a context whose app gives every workspace (ContextOptions::app_workspaces)
  routed,           // routed by expert ids
  combined,         // routed, combining each token's slots (Routing::combine)
  bias,             // an epilogue bias; read where the plan has local experts
};

// What check_operand_presence asks of the plan.
struct PlanFacts {
  bool existing = false, device_metadata = false, routed = false, combine = false, bias = false;
  bool workspace = false;  // the plan uses a workspace: device metadata, or a reduction split over work items
  bool app_workspace = false;  // and has none of its own: the app gives every record() one
  // A bias the kernel reads: of at least one element (a shard with no local expert reads none), in a plan
  // with something to dispatch.
  bool bias_read = false;
};

enum class OperandId : unsigned {
#define VKGMM_OPERAND_ID(name, written, when) name,
  VKGMM_OPERAND_TABLE(VKGMM_OPERAND_ID)
#undef VKGMM_OPERAND_ID
      count
};
constexpr size_t kOperandCount = static_cast<size_t>(OperandId::count);

// A row of an operand table that says, in `when`, which problems take the operand (this file's
// OperandWhen, backward_operands.hpp's BackwardWhen).
template <class When>
struct PresenceRow {
  const char* name;
  bool written;
  When when;
};

using OperandRow = PresenceRow<OperandWhen>;
inline constexpr OperandRow kOperandRows[kOperandCount] = {
#define VKGMM_OPERAND_ROW(name, written, when) {#name, written, OperandWhen::when},
    VKGMM_OPERAND_TABLE(VKGMM_OPERAND_ROW)
#undef VKGMM_OPERAND_ROW
};

// Every op's views (GmmOperands and TgmmOperands are subsets of these fields).
struct OperandViews {
#define VKGMM_OPERAND_FIELD(name, written, when) BufferView name;
  VKGMM_OPERAND_TABLE(VKGMM_OPERAND_FIELD)
#undef VKGMM_OPERAND_FIELD
  const BufferView& operator[](OperandId id) const {
    switch (id) {
#define VKGMM_OPERAND_CASE(name, written, when) \
  case OperandId::name:                   \
    return name;
      VKGMM_OPERAND_TABLE(VKGMM_OPERAND_CASE)
#undef VKGMM_OPERAND_CASE
      default:
        break;
    }
    return lhs;
  }
  BufferView& operator[](OperandId id) { return const_cast<BufferView&>(std::as_const(*this)[id]); }
};

namespace operand_fields {
#define VKGMM_OPERAND_HAS(name, written, when)                                                        \
  template <class T, class = void>                                                              \
  struct has_##name : std::false_type {};                                                       \
  template <class T>                                                                            \
  struct has_##name<T, std::void_t<decltype(std::declval<T&>().name)>> : std::true_type {};
VKGMM_OPERAND_TABLE(VKGMM_OPERAND_HAS)
#undef VKGMM_OPERAND_HAS
}  // namespace operand_fields

// Copies every operand field `from` has into `to` (which must have each of them), through `convert`: the
// public structs into OperandViews, the C API's structs into the C++ ones.
template <class To, class From, class Convert>
void copy_operands(To& to, const From& from, Convert convert) {
  // Every view field of `from` is a row of the table: one the table lacks would be dropped silently. The
  // C structs' struct_size is the one other field, smaller than a view.
#define VKGMM_OPERAND_PRESENT(name, written, when) +size_t(operand_fields::has_##name<From>::value)
  constexpr size_t present = 0 VKGMM_OPERAND_TABLE(VKGMM_OPERAND_PRESENT);
#undef VKGMM_OPERAND_PRESENT
  static_assert(sizeof(From) < (present + 1) * sizeof(BufferView), "an operand field the operand table lacks");
#define VKGMM_OPERAND_COPY(name, written, when)                                                       \
  if constexpr (operand_fields::has_##name<From>::value) {                                      \
    static_assert(operand_fields::has_##name<To>::value, "the target lacks operand " #name);    \
    to.name = convert(from.name);                                                               \
  }
  VKGMM_OPERAND_TABLE(VKGMM_OPERAND_COPY)
#undef VKGMM_OPERAND_COPY
}

template <class Operands>
OperandViews views_of(const Operands& ops) {
  OperandViews v;
  copy_operands(v, ops, [](const BufferView& b) { return b; });
  return v;
}

// The table's overlap rule over `views` (check_table_overlaps; existing_out may be out itself):
// "<op>: out overlaps workspace".
void check_operand_overlaps(const char* op, const OperandViews& views);

// Each row's view given exactly where the plan takes it (OperandWhen): "<op>: <name>: a view was given but
// <why>" for one it refuses, "<op>: <name>: <why> but no view was given" for one it needs.
void check_operand_presence(const char* op, const OperandViews& views, const PlanFacts& plan);

}  // namespace vkgmm
