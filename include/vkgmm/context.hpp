// The device vkgmm runs on: either created by vkgmm or borrowed from the application.
#pragma once

#include <vulkan/vulkan.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vkgmm/types.hpp"

namespace vkgmm {

// A range of an application's (or vkgmm's) VkBuffer. Offsets need only be element-aligned. A plan takes
// views of buffers on its own Context's device only: vkgmm's Buffers of that Context, or the app's own
// VkBuffers made on that device (vkgmm cannot tell another device's handle from one of its own).
struct BufferView {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize size = 0;
};

// How a Context runs its work. Every field is read once, when the Context is made; an unset field takes
// its default from the environment variable named beside it (so a deployment can flip a switch without
// a rebuild), else the default given. The switches exist to force each code path on one device (the
// tests run every path on lavapipe this way) and to work around a driver; the defaults are the fast ones.
struct ContextOptions {
  // Device index or a substring of its name. Empty: $VKGMM_DEVICE, else the first discrete, integrated,
  // virtual or CPU device, in that order of preference (lavapipe is chosen when it is all there is).
  // Ignored by Context::wrap.
  std::string device;
  // Enable VK_LAYER_KHRONOS_validation; every message becomes a Status::validation error.
  // Unset: $VKGMM_VALIDATE=1 turns it on. Ignored by Context::wrap (the app creates the instance).
  std::optional<bool> validate;
  // shared, direct or matrix: every plan made on this context uses that schedule, whatever its problem
  // asks (matrix where the call can take it, see Schedule).
  // automatic: each problem's own choice. Unset: $VKGMM_SCHEDULE=shared|direct|matrix, else automatic.
  std::optional<Schedule> schedule;
  // Read and write 16-bit operands natively where the device has storageBuffer16BitAccess (else they
  // are packed in 32-bit words: same results). Unset: true unless $VKGMM_DISABLE_16BIT_STORAGE=1.
  std::optional<bool> storage16;
  // The direct schedule's 4-element loads where the shapes and offsets allow (else scalar loads).
  // Unset: true unless $VKGMM_DISABLE_VEC4=1.
  std::optional<bool> vec4_loads;
  // Read lhs and rhs held in vkgmm's own buffers through texel views on CPU devices (else as storage
  // buffers). Unset: true unless $VKGMM_DISABLE_TEXEL=1.
  std::optional<bool> texel_loads;
  // gmm's grid with device group sizes (DeviceGrid). indirect needs the workspace to be an indirect
  // buffer: vkgmm's own buffers are; an app's only when lent with indirect_usage (borrow_buffer), else
  // that record() takes the upper-bound grid. Unset: $VKGMM_DEVICE_GRID=indirect|upper_bound, else
  // automatic.
  std::optional<DeviceGrid> device_grid;
  // per_visit or persistent: every plan made on this context takes that grid (Grid), whatever its
  // problem asks. automatic: each problem's own choice. Unset: $VKGMM_GRID=per_visit|persistent, else
  // automatic.
  std::optional<Grid> grid;
  // The persistent grid's workgroups; 0: DeviceInfo::compute_units. Unset: $VKGMM_PERSISTENT_WORKGROUPS,
  // else 0.
  std::optional<uint32_t> persistent_workgroups;
  // Bound on every wait for the device, in seconds (a hung device becomes an Error, not a hang).
  // Unset: $VKGMM_TIMEOUT_S, else 600.
  std::optional<double> timeout_s;
  // Compile, when a plan is made, every pipeline its record() can bind (the storage-buffer build beside
  // the texel one, the variants for offsets that are not multiples of 4 elements), so that record()
  // never compiles. Off: the plan compiles the pipeline vkgmm's own buffers take at aligned offsets and
  // record() compiles another the first time a buffer or offset needs it (once per context).
  // Unset: $VKGMM_EAGER_PIPELINES=1|0, else on for GPUs and off on CPU devices, where one compile costs
  // about half a second of CPU time (lavapipe). Context::options() reports the value for its device.
  std::optional<bool> eager_pipelines;
  // The cooperative-matrix extension the matrix schedule runs on: "VK_KHR_cooperative_matrix" or
  // "VK_NV_cooperative_matrix" (a device without it has no matrix units for vkgmm). Empty:
  // $VKGMM_MATRIX_EXTENSION, else KHR where the device has it and vkgmm was built with its compiler, else
  // NV. Names the build to compare where a driver has both (NVIDIA's). Ignored by Context::wrap (the app
  // enabled what device_requirements() named).
  std::string matrix_extension;
  // Plans made on this context allocate no workspace of their own: the app gives every record() of a plan
  // with a workspace (workspace_bytes() > 0) a view of one, from memory it manages itself (its own pool,
  // one workspace shared by plans that never run at the same time), and a record() or check() without one
  // is refused with Status::invalid_argument naming the workspace. Off: each such plan also allocates its
  // own, used by the records that give none. No environment variable: an app written to give no
  // workspace would then fail.
  bool app_workspaces = false;
};

// Handles of an application's device. vkgmm uses them and destroys none of them. The device must have
// been created with what device_requirements() (vkgmm/requirements.hpp) lists as required.
struct BorrowedDevice {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  // Used only by submit_and_wait() and the conveniences built on it; may be null for an app that only
  // records. vkgmm locks it internally, but cannot see the app's own submits to it: those must not run
  // concurrently with vkgmm's (Vulkan's rule for any queue).
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;  // of `queue`, and of the command buffers the app records vkgmm into
  // Whether the app enabled storageBuffer16BitAccess on `device`. vkgmm cannot see the enabled features;
  // false keeps 16-bit operands on the packed 32-bit path (same results, no feature needed).
  bool storage_buffer_16bit = false;
  // Optional: the vkGetInstanceProcAddr the app loads Vulkan with (volk or similar). vkgmm resolves its
  // extension entry points through it (vkCmdPushDescriptorSetKHR, and the cooperative-matrix properties
  // query, KHR or NV). Core entry points are still called
  // through the loader vkgmm links (libvulkan.so.1), so the handles must come from that loader.
  PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;
  // Whether the app enabled the matrix units on `device`: device_requirements(instance, physical_device)'s
  // matrix_extension and the features it lists (storage_buffer_16bit among them). vkgmm checks that the
  // device offers them (wrap throws where it does not) but cannot see what was enabled. false: no
  // matrix schedule on this context.
  bool matrix_units = false;
};

struct DeviceInfo {
  std::string name;
  std::string driver;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t api_version = 0;
  // The PCI vendor and device ids the driver reports, and the device class vkgmm tunes for ("nvidia-ampere",
  // "amd-rdna3", "intel-xe2", ..., "gpu" for an unknown GPU, "cpu" for a CPU driver): which of its choices
  // per architecture (the matrix units' subgroup size, the shared schedule's register tile) it makes here.
  uint32_t vendor_id = 0, device_id = 0;
  std::string architecture;
  uint32_t subgroup_size = 0;
  // 32-bit vector registers per lane of one SIMD's register file, shared by its resident waves
  // (VK_AMD_shader_core_properties: vgprsPerSimd at wavefrontSize lanes, per subgroup_size lanes); 0 when
  // the device does not say. The shared schedule sizes its register tile by it.
  uint32_t vector_registers = 0;
  uint32_t max_shared_memory = 0;
  uint32_t max_workgroup_invocations = 0;
  uint32_t max_workgroup_count[3] = {0, 0, 0};
  uint64_t max_storage_buffer_range = 0;
  uint64_t min_storage_buffer_offset_alignment = 0;
  uint64_t device_local_bytes = 0;
  bool push_descriptor = false;  // required
  bool storage_buffer_16bit = false;
  // Uniform texel buffers of R32G32B32A32_UINT / R16G16B16A16_UINT are supported. On CPU devices vkgmm
  // reads the inputs held in its own buffers through them (~3x faster loads on lavapipe).
  bool texel_loads_32bit = false;
  bool texel_loads_16bit = false;
  uint64_t max_texel_buffer_elements = 0;
  bool timestamps = false;
  float timestamp_period_ns = 0;
  // Workgroups the device runs at once, about (the persistent grid's default count): on a CPU device its
  // hardware threads (lavapipe runs a thread per CPU); on a GPU its compute units where an extension
  // says (VK_AMD_shader_core_properties, VK_NV_shader_sm_builtins), else 64 (a guess).
  uint32_t compute_units = 0;
  // The matrix units gmm's matrix schedule (Schedule::matrix) runs on: the cooperative-matrix extension
  // vkgmm enabled for f16 products accumulated in f32 (ContextOptions::matrix_extension's, else
  // VK_KHR_cooperative_matrix, else VK_NV_cooperative_matrix), and the M x N x K shape it takes; empty and
  // 0 where it uses none (the device lists no such shape of that extension or lacks a feature the builds
  // need, vkgmm was built without a compiler for the extension, or the device is borrowed without
  // BorrowedDevice::matrix_units).
  std::string matrix_extension;
  uint32_t matrix_m = 0, matrix_n = 0, matrix_k = 0;
  // Whether the automatic schedule takes the matrix units for f16 (with matrix_extension set): false on a
  // driver where vkgmm's matrix builds were seen to give wrong results (NVIDIA's proprietary driver:
  // docs/gpu-results.md), where f16 runs the shared FMA schedule unless Schedule::matrix is asked for.
  bool matrix_automatic = false;
  // The subgroup size the matrix builds run at (every subgroup full): the device's class's choice where
  // pipelines may require a size (wave32 on RDNA3, the EU's SIMD width on Intel), else the device's fixed
  // or default size; 0 without matrix units.
  uint32_t matrix_subgroup_size = 0;
  // Every cooperative-matrix shape the device lists, as "KHR 16x16x16 f16*f16+f32->f32 subgroup".
  std::vector<std::string> matrix_shapes;
};

class Context;

// A device buffer made by a Context: mapped, or where the host's window on device memory is small (a
// discrete GPU without resizable BAR), the Context made its own device and the buffer is 1 MiB or more,
// device-local, upload and download then copying through a staging buffer (each a submission that
// waits, after the work submitted before it). Move-only; it keeps its device alive, so it may outlive the Context object it came from.
class VKGMM_API Buffer {
 public:
  Buffer();
  Buffer(Buffer&&) noexcept;
  Buffer& operator=(Buffer&&) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  VkBuffer handle() const;
  VkDeviceSize size() const { return size_; }
  BufferView view() const { return {handle(), 0, size_}; }
  BufferView view(VkDeviceSize offset, VkDeviceSize size) const { return {handle(), offset, size}; }

  void upload(const void* data, size_t bytes, size_t offset = 0);
  void download(void* data, size_t bytes, size_t offset = 0) const;

 private:
  friend class Context;
  struct VKGMM_HIDDEN State;
  std::unique_ptr<State> state_;
  VkDeviceSize size_ = 0;
};

struct ContextInternals;

class VKGMM_API Context {
 public:

  explicit Context(const ContextOptions& options = {});
  // Wrap an application's device: the handles stay the application's. `options.device` and
  // `options.validate` do not apply (the app made the device and the instance). Every plan and Buffer of
  // the wrapped Context (each keeps it alive) must be destroyed before the app destroys its device: they
  // destroy their Vulkan objects on it.
  static Context wrap(const BorrowedDevice& device, const ContextOptions& options = {});

  Context(Context&&) noexcept;
  Context& operator=(Context&&) noexcept;
  ~Context();

  const DeviceInfo& info() const;
  // The most bytes of lhs or rhs of element type t (a block format: its storage bytes) that a call reads
  // whole, from one binding: maxStorageBufferRange (less 16 bytes or the offset alignment, for a view that
  // starts past an aligned offset), or where vkgmm reads inputs through texel views (CPU devices, buffers
  // from create_buffer or borrow_buffer) what a view reaches from its buffer's start (2 GiB of f32 on
  // lavapipe; where out fits one binding).
  // Larger inputs are bound in up to 4 parts, read far slower (a word at a time): an engine sharding its
  // experts (group_offset, num_actual_groups) keeps each window's weights within this.
  uint64_t max_whole_input_bytes(DType t) const;
  // The options in force, every field set (defaults and environment resolved).
  ContextOptions options() const;
  VkDevice device() const;

  Buffer create_buffer(VkDeviceSize bytes);
  // An app's own VkBuffer of `bytes`, known to vkgmm for as long as the returned Buffer lives: vkgmm
  // checks views of it exactly and reads it as it reads its own (on CPU devices through texel views, ~3x
  // faster on lavapipe than the storage-buffer loads an unknown VkBuffer gets). The app keeps the
  // VkBuffer and its memory alive until the Buffer is destroyed and the work recorded with it has
  // completed; vkgmm destroys only what it made (the views). The VkBuffer needs
  // VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, and VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT unless
  // `texel_usage` is false (then no views: storage-buffer loads). The Buffer has no host mapping (upload
  // and download refuse); its handle() is the app's. A VkBuffer is borrowed by one Buffer at a time.
  // `indirect_usage`: the VkBuffer has VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT, so a workspace in it can hold
  // the indirect grid's dispatch command (ContextOptions::device_grid); else the upper-bound grid.
  Buffer borrow_buffer(VkBuffer buffer, VkDeviceSize bytes, bool texel_usage = true, bool indirect_usage = false);

  // Record with `record` into a one-time command buffer, submit it and wait (bounded) for it.
  void submit_and_wait(const std::function<void(VkCommandBuffer)>& record);

  // Validation messages seen since the last call, every thread's (the tests fail on any).
  std::vector<std::string> take_validation_messages();

  struct VKGMM_HIDDEN Impl;  // opaque: the library's, exported with nothing

 private:
  friend struct ContextInternals;  // the library's own access to the parts
  VKGMM_HIDDEN explicit Context(std::shared_ptr<Impl> impl);  // wrap()'s, inside the library
  std::shared_ptr<Impl> impl_;
};

}  // namespace vkgmm
