// Element types, status codes, errors and tilings: the vocabulary every other header uses.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "vkgmm/export.h"
#include "vkgmm/vocabulary.h"

namespace vkgmm {

// Listed once in vkgmm/vocabulary.h (VKGMM_DTYPES), with the C enum and the shaders' VKGMM_DT_*.
// f32, f16 and bf16 are element types of any operand. The others are GGUF's block formats, byte for byte
// ggml's block_* structs (docs/contract.md, "Quantized expert weights"), for gmm's rhs only: `block_elements`
// values along k stored in `block_bytes` bytes.
#define VKGMM_CPP_DTYPE_(name, NAME, value, values, bytes, ggml) name = value,
enum class DType : uint32_t { VKGMM_DTYPES(VKGMM_CPP_DTYPE_) };
#undef VKGMM_CPP_DTYPE_
// Whether `t` is one of the listed types (a DType cast from any other number is not).
constexpr bool is_known(DType t) {
#define VKGMM_DTYPE_IS_(name, NAME, value, values, bytes, ggml) t == DType::name ||
  return VKGMM_DTYPES(VKGMM_DTYPE_IS_) false;
#undef VKGMM_DTYPE_IS_
}

// Every block format, in VKGMM_DTYPES's order: `for (DType t : block_formats())`.
constexpr size_t block_format_count() {
#define VKGMM_DTYPE_COUNT_(name, NAME, value, values, bytes, ggml) +size_t(values > 1)
  return 0 VKGMM_DTYPES(VKGMM_DTYPE_COUNT_);
#undef VKGMM_DTYPE_COUNT_
}
constexpr std::array<DType, block_format_count()> block_formats() {
  std::array<DType, block_format_count()> formats{};
  size_t at = 0;
#define VKGMM_DTYPE_BLOCK_(name, NAME, value, values, bytes, ggml) \
  if (values > 1) formats[at++] = DType::name;
  VKGMM_DTYPES(VKGMM_DTYPE_BLOCK_)
#undef VKGMM_DTYPE_BLOCK_
  return formats;
}

// Bytes of one element; throws Error(invalid_argument) for a block format (see storage_bytes).
VKGMM_API size_t dtype_size(DType t);
VKGMM_API const char* dtype_name(DType t);
// "f32", "float32", ..., and the block formats by GGUF's names ("q8_0", "q4_K", "mxfp4"; any case).
VKGMM_API std::optional<DType> parse_dtype(std::string_view name);
VKGMM_API bool is_quantized(DType t);
// The block formats' names in VKGMM_DTYPES's order, for messages and help: "q8_0, q4_0, q4_K, ...".
VKGMM_API const char* block_format_names();
// Values per block (1 for the element types) and bytes per block (dtype_size for the element types).
VKGMM_API size_t block_elements(DType t);
VKGMM_API size_t block_bytes(DType t);
// Bytes of `count` values of type t; for a block format count must be a multiple of block_elements
// (throws Error(invalid_argument) otherwise).
VKGMM_API uint64_t storage_bytes(DType t, uint64_t count);

enum class Status {
  ok = 0,
  invalid_argument,  // the caller's input breaks a rule of docs/contract.md
  unsupported,       // valid input the device or build cannot run
  out_of_memory,     // host or device allocation (or a memory map) failed
  device_lost,       // VK_ERROR_DEVICE_LOST or a wait that timed out
  vulkan_error,      // any other failing VkResult
  validation,        // the validation layer reported a message (VKGMM_VALIDATE=1)
  internal,
};
VKGMM_API const char* status_name(Status s);

// Every failure of the library is an Error: a code for programs, a message naming the argument for people.
// Exported (default visibility) so that its typeinfo is one across the library boundary: an app catches
// what libvkgmm.so throws.
class VKGMM_API Error : public std::runtime_error {
 public:
  Error(Status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  Status status() const { return status_; }

 private:
  Status status_;
};

// gmm: output tile rows, K step, output tile columns. tgmm (as megablox's): the step over a group's rows
// (its sum's length), the output block's rows (k) and columns (n).
struct Tiling {
  int64_t tm = 0, tk = 0, tn = 0;
  // Spelled out: the public headers are C++17 (a defaulted operator== is C++20).
  bool operator==(const Tiling& o) const { return tm == o.tm && tk == o.tk && tn == o.tn; }
  bool operator!=(const Tiling& o) const { return !(*this == o); }
};

// A lookup function (m, k, n) -> tiling, returning nullopt when it has none for that shape (an error).
using TilingFn = std::function<std::optional<Tiling>(int64_t m, int64_t k, int64_t n)>;

// How the tiling is chosen: a fixed tuple, a lookup function, or automatic (neither set).
struct TilingChoice {
  std::optional<Tiling> fixed;
  TilingFn lookup;

  static TilingChoice automatic() { return {}; }
  static TilingChoice of(Tiling t) { return {t, nullptr}; }
  static TilingChoice of(TilingFn fn) { return {std::nullopt, std::move(fn)}; }
};

// Which kernel schedule runs: staged through shared memory (the GPU schedule), or register micro-tiles
// read straight from the buffers (fast on CPU drivers such as lavapipe; on GPUs, with the reduction split
// over the workgroup, the decode schedule), or the matrix schedule: the shared schedule's staging in f16
// and the products on the device's matrix units (cooperative matrices, DeviceInfo::matrix_extension),
// accumulated in f32, for f16 lhs with f16 rhs (gmm: or a block format). Automatic picks by device type,
// on GPUs takes the direct schedule for gmm's groups of a few rows when the tiling is automatic too, and
// the matrix schedule where shared would run, the call can take it and the driver is trusted with it
// (DeviceInfo::matrix_automatic). Asked of a problem, matrix is
// refused where the call cannot take it (f32 or bf16 inputs, no matrix units, 16-bit storage off, operands
// bound in parts; a backward's parts that cannot run shared instead);
// forced on a context ($VKGMM_SCHEDULE=shared|direct|matrix, ContextOptions::schedule, to exercise each
// path on one device), the calls that cannot take it run the shared schedule.
#define VKGMM_CPP_CHOICE_(name, NAME, value) name = value,
enum class Schedule { VKGMM_SCHEDULES(VKGMM_CPP_CHOICE_) };

// gmm's grid when its group sizes are on the device (DeviceGroupSizes): the visit count is known only
// there. indirect: the metadata build writes the grid and the op runs with vkCmdDispatchIndirect.
// upper_bound: the host dispatches the plan's bound on the visits and the surplus workgroups exit at
// once. automatic: indirect, on every device (docs/device-group-sizes.md).
enum class DeviceGrid { VKGMM_DEVICE_GRIDS(VKGMM_CPP_CHOICE_) };

// How an op's workgroups take its work items (gmm: a visit's n tile; tgmm: a group's output block).
// per_visit: one workgroup per item. persistent: a fixed number of workgroups, about one per compute unit
// (ContextOptions::persistent_workgroups), each looping over the items from its index by their count.
// automatic: per_visit, the persistent grid having measured slower on lavapipe (docs/architecture.md,
// "The persistent grid"; no GPU measured).
enum class Grid { VKGMM_GRIDS(VKGMM_CPP_CHOICE_) };
#undef VKGMM_CPP_CHOICE_

// Each choice's names, a table made from its list in vkgmm/vocabulary.h: {value, name} in value order.
template <typename E>
struct NamedChoice {
  E value;
  const char* name;
};
#define VKGMM_SCHEDULE_ROW_(name, NAME, value) NamedChoice<Schedule>{Schedule::name, #name},
inline constexpr NamedChoice<Schedule> kSchedules[] = {VKGMM_SCHEDULES(VKGMM_SCHEDULE_ROW_)};
#undef VKGMM_SCHEDULE_ROW_
#define VKGMM_DEVICE_GRID_ROW_(name, NAME, value) NamedChoice<DeviceGrid>{DeviceGrid::name, #name},
inline constexpr NamedChoice<DeviceGrid> kDeviceGrids[] = {VKGMM_DEVICE_GRIDS(VKGMM_DEVICE_GRID_ROW_)};
#undef VKGMM_DEVICE_GRID_ROW_
#define VKGMM_GRID_ROW_(name, NAME, value) NamedChoice<Grid>{Grid::name, #name},
inline constexpr NamedChoice<Grid> kGrids[] = {VKGMM_GRIDS(VKGMM_GRID_ROW_)};
#undef VKGMM_GRID_ROW_

// The name of `value` in `rows` (kSchedules, kDeviceGrids, kGrids), nullptr for a number that is none.
template <typename E, size_t N>
constexpr const char* choice_name(const NamedChoice<E> (&rows)[N], E value) {
  for (const NamedChoice<E>& r : rows)
    if (r.value == value) return r.name;
  return nullptr;
}
// The choice `name` names in `rows`; nullopt for any other text.
template <typename E, size_t N>
constexpr std::optional<E> choice_of_name(const NamedChoice<E> (&rows)[N], std::string_view name) {
  for (const NamedChoice<E>& r : rows)
    if (name == r.name) return r.value;
  return std::nullopt;
}
// The names for messages: "automatic, shared, direct or matrix".
template <typename E, size_t N>
std::string choice_names(const NamedChoice<E> (&rows)[N]) {
  std::string text;
  for (size_t i = 0; i < N; ++i) text += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + rows[i].name;
  return text;
}
// The schedule's name ("?" for a number that is no Schedule).
VKGMM_API const char* schedule_name(Schedule s);

}  // namespace vkgmm
