// One workload on the device: its inputs (host copies and device buffers), its plans, and one call.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "vkgmm/context.hpp"
#include "vkgmm/ops.hpp"
#include "workloads.hpp"

namespace bench {

// `count` values uniform in [-1, 1), rounded to t (exactly what the device sees of them).
std::vector<float> random_values(size_t count, vkgmm::DType t, std::mt19937& rng);

// One output of an op, as floats (16-bit outputs are widened exactly).
struct Output {
  std::string name;          // "out", "d_lhs", "d_rhs"
  std::vector<float> values;
  int64_t reduction = 0;     // the longest sum behind one element (what its rounding error grows with)
};

// Inputs are uniform in [-1, 1), rounded to the workload's dtype, so host copies are exactly what the
// device sees. Layouts (row-major):
//   gmm:      a = lhs [m, k], b = rhs [G, k, n]                 -> out [m, n]
//             (block-format weights: b = rhs [G, n, k], the values buf_b's blocks hold)
//   tgmm:     a = lhs [k, m], b = rhs [m, n]                    -> out [G, k, n]
//   backward: a = lhs [m, k], b = rhs [G, k, n], c = d_out [m, n] -> d_lhs [m, k], d_rhs [G, k, n]
class Instance {
 public:
  // Plans first (so a workload the device refuses fails before megabytes of inputs are made), then
  // generates and uploads the inputs.
  Instance(vkgmm::Context& ctx, const Workload& w, const vkgmm::TilingChoice& tiling);

  // Builds the plans for `tiling`: validation, metadata build and upload, pipeline lookup. This is the
  // host's share of a call, timed on its own. device_sizes: the device path, the group sizes read from
  // buf_sizes (the metadata is then built on the device by every recorded call, in the plans' own
  // workspace) and the device status written to buf_status. schedule: the problem's (automatic: the
  // workload's own).
  void plan(const vkgmm::TilingChoice& tiling, bool device_sizes = false,
            vkgmm::Schedule schedule = vkgmm::Schedule::automatic);
  // The tiling the plans run, "tm,tk,tn" (backward: "d_lhs/d_rhs" when the two differ).
  std::string tiling_text() const;
  // The tiling the plans run, when it is one (nullopt for a backward whose two plans differ): passed
  // back as a fixed choice it resolves to itself.
  std::optional<vkgmm::Tiling> single_tiling() const;
  // The schedule the plans run, when it is one (automatic for a backward whose two plans differ): with
  // single_tiling() fixed, a GPU's automatic schedule would no longer follow the groups' rows.
  vkgmm::Schedule single_schedule() const;
  void record(VkCommandBuffer cb) const;
  // What record() runs, in one line: the plans' op, tiling, grid and load path, each operand's view
  // (offset and size), the metadata's path. Two Instances of one workload planned alike describe
  // themselves alike (the sweep's default and the table's call; ctest compares them).
  std::string describe() const;
  // The device status word of the last call on the device path (vkgmm::device_status bits).
  uint32_t device_status() const;
  // The inputs and outputs as an engine passes them: copies in VkBuffers of the bench's own, each in the
  // memory type vkgmm gave the buffer it copies (mapped, or device-local where vkgmm stages it), made and
  // read back by device copies, borrowed with Context::borrow_buffer.
  // use_app_buffers() picks the set record() and download() use (make_app_copies() first).
  void make_app_copies();
  void use_app_buffers(bool on) { app_mode_ = on; }
  // The property flags of the memory the app copies were allocated in (0 before make_app_copies()), and
  // of the memory type vkgmm gives its own buffer of lhs.
  VkMemoryPropertyFlags app_memory_flags() const;
  VkMemoryPropertyFlags own_memory_flags() const;
  // The device path's workspace (--device-grid both): the plans' own (none), or one of the bench's own
  // VkBuffers of the plans' workspace_bytes(), lent as an indirect buffer or not (then the library takes
  // the upper-bound grid). make_workspaces() after a plan(.., true).
  enum class Workspace { plans_own, indirect, not_indirect };
  void make_workspaces();
  // The plans' workspace (0: none, as a device path whose kernel reads the sizes itself).
  VkDeviceSize workspace_bytes() const;
  void use_workspace(Workspace w) { workspace_ = w; }
  // The grid the next plan() asks for (vkgmm::Grid; the context may force one).
  void use_grid(vkgmm::Grid g) { grid_ = g; }
  std::vector<Output> download() const;
  // The outputs record() writes (vkgmm's own or the app's copies, as in use) filled with NaN, so that a
  // check after the next record() reads only what that call wrote, not what an earlier one left.
  void poison_outputs() const;

  // The problem as the forward gmm (gmm and backward) or tgmm sees it, without a tiling.
  vkgmm::GmmProblem gmm_problem() const;
  vkgmm::TgmmProblem tgmm_problem() const;

  vkgmm::Context& ctx;
  const Workload& work;
  std::vector<float> a, b, c;
  vkgmm::Buffer buf_a, buf_b, buf_c, out0, out1;  // out1 only for backward (d_rhs)
  vkgmm::Buffer buf_sizes, buf_status;            // the device path's group sizes (int32 [G]) and status

 private:
  std::optional<vkgmm::GmmPlan> gmm_;
  std::optional<vkgmm::TgmmPlan> tgmm_;
  std::optional<vkgmm::GmmBackwardPlan> backward_;
  bool device_sizes_ = false;
  struct AppCopy;
  std::vector<std::shared_ptr<AppCopy>> app_;  // of buf_a, buf_b, buf_c, out0, out1 (null where absent)
  bool app_mode_ = false;
  std::shared_ptr<AppCopy> workspaces_[2];  // lent as an indirect buffer, and not
  Workspace workspace_ = Workspace::plans_own;
  vkgmm::Grid grid_ = vkgmm::Grid::automatic;
  // A VkBuffer of the bench's own in `memory_type` (one of vkgmm's buffers'), not mapped, lent to vkgmm
  // with `usage` (texel / indirect bits).
  std::shared_ptr<AppCopy> app_buffer(VkDeviceSize bytes, VkBufferUsageFlags usage, uint32_t memory_type) const;
  // `op` (transfer commands) in a submission of its own, ordered after the earlier ones' work and before
  // the later ones'; `bytes` from one VkBuffer to another that way.
  void transfer(const std::function<void(VkCommandBuffer)>& op) const;
  void copy_on_device(VkBuffer from, VkBuffer to, VkDeviceSize bytes) const;
  vkgmm::BufferView workspace_view() const;
  // The buffer record() and download() use in place of own (index: its place in app_).
  const vkgmm::Buffer& pick(const vkgmm::Buffer& own, size_t index) const;
  std::vector<float> download_from(const vkgmm::Buffer& own, size_t index, size_t count) const;
};

// A backward's tiling, "tm,tk,tn", or "d_lhs/d_rhs" when its two plans run different ones.
std::string backward_tiling_text(const vkgmm::GmmBackwardPlan& plan);

// Expert weights in a block format: random floats (uniform in [-1, 1)) quantized as GGUF stores an
// expert tensor [experts, n, k], blocks along k; `values` are what the blocks hold (quant::dequantize).
struct QuantizedWeights {
  std::vector<uint8_t> blocks;
  std::vector<float> values;
};
QuantizedWeights quantized_weights(vkgmm::DType format, int64_t experts, int64_t n, int64_t k, std::mt19937& rng);
// Raw bytes -> a new device buffer (padded to whole 32-bit words, at least 4 bytes).
vkgmm::Buffer upload_bytes(vkgmm::Context& ctx, std::vector<uint8_t> bytes);

// Bytes of a buffer holding `count` elements of t (at least 4: never a zero-size buffer). No rounding:
// vkgmm pads its own buffers.
size_t buffer_bytes(vkgmm::DType t, size_t count);

// Host data -> bytes of type t -> a new device buffer.
vkgmm::Buffer upload(vkgmm::Context& ctx, vkgmm::DType t, const std::vector<float>& values);
// `op` (transfer commands) in a submission of its own, ordered after the earlier ones' work and before
// the later ones'.
void transfer(vkgmm::Context& ctx, const std::function<void(VkCommandBuffer)>& op);
// Each buffer filled with NaN (all bits set) that way: an output a check reads after the next call, which
// a call that wrote nothing would otherwise pass with what an earlier one left.
void fill_with_nan(vkgmm::Context& ctx, std::initializer_list<const vkgmm::Buffer*> buffers);
// The same fill of one buffer (vkgmm's or the app's own VkBuffer), recorded into a transfer's `cb`.
void record_nan_fill(VkCommandBuffer cb, VkBuffer buffer);
// A device buffer of `count` elements of type t, zero-filled.
vkgmm::Buffer zeros(vkgmm::Context& ctx, vkgmm::DType t, size_t count);
std::vector<float> download(const vkgmm::Buffer& buf, vkgmm::DType t, size_t count);

}  // namespace bench
