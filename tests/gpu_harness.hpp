// Shared pieces of the device tests: a validated context, random problems, and running an op from host
// vectors so each test is a comparison against vkgmm::reference.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "vkgmm/reference.hpp"
#include "vkgmm/vkgmm.hpp"

namespace vkgmm::test {

// One Context per test process, validation on; every test fails on any validation message.
class DeviceTest : public ::testing::Test {
 public:
  static Context& ctx();
  // ctx() for automatic; for shared or direct, a context of the process's own whose options force that
  // schedule on every plan (ContextOptions::schedule), checked like ctx().
  static Context& ctx(Schedule schedule);
  // A context of the test's own with these options, to force a path. Validation is forced on: a message
  // becomes an Error at the next plan or submission on it.
  static Context make_context(ContextOptions options);

 protected:
  void TearDown() override;
};

// Group-size generators (JAX tpu_gmm_test's cases and more). Sizes sum to at most m.
enum class Sizes {
  random,          // uniform random split of all m rows
  empty_ends,      // empty first, middle and last groups
  one_group_all,   // one (middle) group holds every row
  split_tiles,     // sizes chosen to start and end inside tiles
  sum_below_m,     // random, with rows left over at the end
};
std::vector<int32_t> make_group_sizes(Sizes kind, int64_t G, int64_t m, std::mt19937& rng);
// What the device makes of group sizes in a device buffer (vkgmm::DeviceGroupSizes): negative -> 0,
// offsets clamped at m; `status` gets the status word's bits that says so.
std::vector<int32_t> sizes_taken(const std::vector<int32_t>& sizes, int64_t m, uint32_t& status);
const char* sizes_name(Sizes kind);

// Values exactly representable in t, in [-1, 1].
// For a block format (count whole blocks), random weights quantized and decoded: run_* upload the very
// blocks they came from.
std::vector<float> random_values(size_t count, DType t, std::mt19937& rng);

// Run an op on the device from host float vectors (encoded to each operand's type); returns the output
// decoded to float. existing_out may be empty when the problem has none; bias (f32) when it has none.
std::vector<float> run_gmm(Context& ctx, const GmmProblem& p, const std::vector<float>& lhs,
                           const std::vector<float>& rhs, const std::vector<float>& existing_out = {},
                           const std::vector<float>& bias = {});
std::vector<float> run_tgmm(Context& ctx, const TgmmProblem& p, const std::vector<float>& lhs,
                            const std::vector<float>& rhs, const std::vector<float>& existing_out = {});
reference::Gradients run_backward(Context& ctx, const GmmProblem& p, const std::vector<float>& lhs,
                                  const std::vector<float>& rhs, const std::vector<float>& d_out);

// The same runs with the group sizes in a device buffer (DeviceGroupSizes), with the tiling the host path's
// plan chose; each also expects the device status word to read 0 and the plans' tilings to agree. gmm and
// the backward (whose d_lhs is a gmm) run on both grids (DeviceGrid) on ctx, its options' and the other
// (the tests' grid hook, tiling_device.hpp), which must agree bit for bit; the result is the options' grid's.
// gmm's metadata build runs on both grids, then where its plan takes it the sizes read in the kernel
// (SizesInKernelHook), which must agree too.
std::vector<float> run_gmm_device(Context& ctx, const GmmProblem& p, const std::vector<float>& lhs,
                                  const std::vector<float>& rhs, const std::vector<float>& existing_out = {},
                                  const std::vector<float>& bias = {});

// gmm routed by expert ids (p.routing.top_k > 0): ids int32 [T, top_k] in a device buffer, weights (f32,
// with p.routing.combine), existing_out and bias as above, the plan's own workspace and a status word,
// which must read expected_status afterwards (0 unless the ids break the contract). Returns out,
// [T, top_k, n_out] or, combined, [T, n_out].
std::vector<float> run_gmm_routed(Context& ctx, const GmmProblem& p, const std::vector<float>& lhs,
                                  const std::vector<float>& rhs, const std::vector<int32_t>& ids,
                                  const std::vector<float>& weights = {}, const std::vector<float>& existing_out = {},
                                  const std::vector<float>& bias = {}, uint32_t expected_status = 0);
// The elements of gmm's out: m * n_out, or with routing T * top_k * n_out ([T, n_out] combined).
size_t gmm_out_elements(const GmmProblem& p);

// A view of `bytes` in the middle of a buffer whose other bytes are poison, to show that an op touched
// nothing outside its views.
struct Guarded {
  static constexpr VkDeviceSize kGuard = 256;
  static constexpr uint8_t kPoison = 0xa5;
  Buffer buffer;
  VkDeviceSize bytes = 0;
  Guarded(Context& ctx, VkDeviceSize n);
  BufferView view() const { return buffer.view(kGuard, bytes); }
  void set(const void* data, size_t n) { buffer.upload(data, n, kGuard); }
  // The view's bytes poisoned again, so that a run that writes nothing shows against the last one's.
  void poison();
  std::vector<uint8_t> get() const;
  ::testing::AssertionResult guards_intact() const;
};
Guarded guarded_floats(Context& ctx, const std::vector<float>& v);
std::vector<float> floats(const Guarded& g);

// Expects f to throw Error(status) whose message contains `needle`.
void expect_refused(const std::function<void()>& f, Status status, const std::string& needle);
// Expects f to throw Error(invalid_argument) whose message contains `needle`.
void expect_invalid_argument(const std::function<void()>& f, const std::string& needle);
std::vector<float> run_tgmm_device(Context& ctx, const TgmmProblem& p, const std::vector<float>& lhs,
                                   const std::vector<float>& rhs, const std::vector<float>& existing_out = {});
reference::Gradients run_backward_device(Context& ctx, const GmmProblem& p, const std::vector<float>& lhs,
                                         const std::vector<float>& rhs, const std::vector<float>& d_out);
// An app's own host-visible VkBuffer of exactly `bytes`, holding `bytes` data (when given), made on the
// context's device the way an engine would, and destroyed with this object.
struct AppBuffer {
  AppBuffer(Context& ctx, const std::vector<uint8_t>& bytes, VkBufferUsageFlags usage);
  ~AppBuffer();
  AppBuffer(const AppBuffer&) = delete;
  AppBuffer& operator=(const AppBuffer&) = delete;
  VkDevice device = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
};

// Every element bit for bit (the device path promises the host path's bits).
::testing::AssertionResult same_bits(const std::vector<float>& a, const std::vector<float>& b);

// Whether plans on c read inputs held in vkgmm's own buffers through texel views (CPU devices whose
// formats allow it, texel_loads on; with `sixteen` for 16-bit inputs too): what plan.texel_loads() says
// there. GPUs read storage buffers.
bool reads_texel_views(const Context& c, bool sixteen = false);

// A context of the test's own (validation on) that binds at most `bytes` as one storage buffer, as a
// device whose maxStorageBufferRange were `bytes` would: operands past one binding (the split layout, the
// texel views' reach, the refusals past four parts) on shapes any device runs in a moment. Plans read the
// limit from Context::info(), which reports the lowered value.
Context binding_limited_context(uint64_t bytes, ContextOptions options = {});

// A context of the test's own (validation on) whose plans choose their schedule and tiles as a CPU device's
// do (tiling_device.hpp): on a GPU, where gmm's few-row visits would take K-sliced 32-column tiles, it
// plans the CPU's direct-schedule tiles (whole weight rows for decode, 32 x 128 for prefill, one K slice),
// so tests of those shapes check them, and run them, on any device. On a CPU device its plans are the
// device's own. What may run (texel views, the loop budget, the grid's limits) stays the real device's.
Context cpu_planned_context(ContextOptions options = {});
// A context of the test's own whose plans choose as a discrete GPU's with 512 registers per lane, 16 compute
// units (or `compute_units`) and subgroups of 64 do (tiling_device.hpp: discrete_gpu_like), where the real
// device is a CPU: the GPU tilings and the split reductions, checked and run on lavapipe.
Context gpu_planned_context(ContextOptions options = {}, uint32_t compute_units = 16);

// While it lives, `place` holds `value`; it puts back what it held when it goes (the test hooks below).
template <typename T>
class Scoped {
 public:
  Scoped(T& place, T value) : place_(place), previous_(std::exchange(place, std::move(value))) {}
  ~Scoped() { place_ = std::move(previous_); }
  Scoped(const Scoped&) = delete;
  Scoped& operator=(const Scoped&) = delete;

 private:
  T& place_;
  T previous_;
};

// While it lives, the plans ctx makes with device group sizes take `grid`, whatever ctx's options choose (the
// tests' grid hook, tiling_device.hpp's); it restores the hook's previous value when it goes.
class GridHook : Scoped<std::optional<DeviceGrid>> {
 public:
  GridHook(Context& ctx, DeviceGrid grid);
  // Both grids: the one ctx's options give its plans (automatic resolved for the device), then the other.
  static std::array<DeviceGrid, 2> both(const Context& ctx);
};

// While it lives, the gmm plans ctx makes with device group sizes read them in the kernel where they can
// (`on`, the default: ResolvedOptions::sizes_in_kernel) or always take the metadata build; it restores the
// previous choice when it goes.
class SizesInKernelHook : Scoped<bool> {
 public:
  SizesInKernelHook(Context& ctx, bool on);
};

// Runs gmm on f32 inputs drawn from `seed` (rhs holding every group) and expects the reference's result.
void expect_gmm_matches_reference(Context& ctx, const GmmProblem& p, uint32_t seed);

// Host values to and from device buffers in an element type (exactly the elements' bytes); an output
// buffer poisoned with 0xA5 bytes, and whether its first `bytes` still are; a status word starting as all
// ones, and its check.
Buffer upload(Context& ctx, DType t, const std::vector<float>& values);
std::vector<float> download(const Buffer& b, DType t, size_t count);
Buffer poisoned(Context& ctx, size_t bytes);
bool still_poisoned(const Buffer& b, size_t bytes);
Buffer status_word(Context& ctx);
void expect_status(const Buffer& s, uint32_t want);
void expect_clean_status(const Buffer& s);

// |got - want| <= atol + rtol * |want| everywhere (NaN must match NaN); reports the first mismatches.
::testing::AssertionResult all_close(const std::vector<float>& got, const std::vector<float>& want, double atol,
                                     double rtol);

// JAX's tolerances: f32 everywhere: atol 1e-3 + rtol 1e-5 (scaled by k for long sums); any 16-bit type:
// atol 1e-3, rtol 1e-2.
struct Tolerance {
  double atol, rtol;
};
Tolerance tolerance_for(DType a, DType b, DType out);

}  // namespace vkgmm::test
