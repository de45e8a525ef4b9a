// An app that owns its Vulkan device and buffers, and records a vkgmm grouped matmul into its own
// command buffer between passes of its own, with the group sizes computed on the device:
//   pass 1 (transfer): upload lhs, rhs and each row's expert from a staging buffer; zero the group
//                      sizes; poison the output with NaNs
//   pass 2 (compute):  count_rows.comp, the app's shader, counts the rows of each expert into group_sizes
//   vkgmm:             out = gmm(lhs, rhs, group_sizes on the device)  (recorded, not submitted, by vkgmm)
//   pass 3 (transfer): copy the output, the group sizes and vkgmm's status word to a readback buffer
// then submits once — no host read between the sizes and vkgmm — checks the result against a CPU loop
// and fails on any validation message (synchronization validation included).
// Run with VKGMM_VALIDATE=1 to turn on the app's validation layer (the tests do).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <vkgmm/vkgmm.hpp>

#include "../no_options.hpp"
#include "app_device.hpp"
#include "router.hpp"

namespace {

// A global memory barrier between two of the command buffer's passes.
void barrier(VkCommandBuffer cb, VkPipelineStageFlags src_stage, VkAccessFlags src, VkPipelineStageFlags dst_stage,
             VkAccessFlags dst) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = src;
  mb.dstAccessMask = dst;
  vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

VkDeviceSize align_up(VkDeviceSize x, VkDeviceSize a) { return (x + a - 1) / a * a; }

// The app's raw Vulkan objects of one run, destroyed on every way out of it: a throw (plan.check, a
// failed Vulkan call) as much as a return.
struct Resources {
  app::AppDevice& dev;
  app::AppDevice::Buffer activations, weights, routing, staging, readback;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  bool submitted = false;

  explicit Resources(app::AppDevice& d) : dev(d) {}
  Resources(const Resources&) = delete;
  Resources& operator=(const Resources&) = delete;
  ~Resources() {
    // A wait that failed (a timeout, a lost device) may leave the command buffer pending, and what a
    // pending command buffer uses must not be destroyed.
    if (submitted) vkDeviceWaitIdle(dev.device);
    if (fence) vkDestroyFence(dev.device, fence, nullptr);
    if (pool) vkDestroyCommandPool(dev.device, pool, nullptr);
    for (auto* b : {&activations, &weights, &routing, &staging, &readback}) dev.destroy_buffer(*b);
  }
};

int run(app::AppDevice& dev) {
  // The problem: 4 experts, one of them empty, and rows no expert took, which must come out zero.
  // Activations f32, expert weights bf16 (half the bytes), output f32. The host knows m (the row
  // capacity), k, n and G; the group sizes exist only on the device, counted by the app's shader.
  const int64_t G = 4;
  vkgmm::GmmProblem p;
  p.m = 200;
  p.k = 96;
  p.n = 80;
  p.device_group_sizes.count = G;
  p.device_group_sizes.expected_rows = 50;  // a hint for the automatic tiling (default: m spread over G)
  p.lhs_type = vkgmm::DType::f32;
  p.rhs_type = vkgmm::DType::bf16;
  p.out_type = vkgmm::DType::f32;

  // The router's output, rows already sorted by expert: 50 rows to expert 0, none to 1, 90 to 2, 40 to
  // 3, and the last 20 rows to none (-1).
  std::vector<int32_t> expert(p.m, -1);
  const int64_t want_sizes[G] = {50, 0, 90, 40};
  for (int64_t g = 0, row = 0; g < G; row += want_sizes[g], ++g)
    for (int64_t r = row; r < row + want_sizes[g]; ++r) expert[r] = static_cast<int32_t>(g);

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> lhs(p.m * p.k), rhs(G * p.k * p.n);
  for (float& x : lhs) x = u(rng);
  for (float& x : rhs) x = vkgmm::round_to(vkgmm::DType::bf16, u(rng));  // the values the device will see
  const std::vector<uint8_t> rhs_bf16 = vkgmm::encode(vkgmm::DType::bf16, rhs);

  // vkgmm on the app's device: nothing borrowed here is ever destroyed by vkgmm.
  vkgmm::BorrowedDevice borrowed;
  borrowed.instance = dev.instance;
  borrowed.physical_device = dev.physical;
  borrowed.device = dev.device;
  borrowed.queue = dev.queue;
  borrowed.queue_family = dev.queue_family;
  borrowed.storage_buffer_16bit = dev.storage_buffer_16bit;
  borrowed.get_instance_proc_addr = vkGetInstanceProcAddr;
  vkgmm::Context ctx = vkgmm::Context::wrap(borrowed);

  // Plan: checks the problem and sizes the workspace the metadata is built in on the device.
  vkgmm::GmmPlan plan(ctx, p);
  const vkgmm::OperandSizes need = plan.sizes();
  const VkDeviceSize workspace_bytes = plan.workspace_bytes();
  std::printf("device: %s; tiling %lldx%lldx%lld; workspace %llu bytes\n", ctx.info().name.c_str(),
              (long long)plan.tiling().tm, (long long)plan.tiling().tk, (long long)plan.tiling().tn,
              (unsigned long long)workspace_bytes);

  // The app's buffers: activations and output share one device-local buffer (views at offsets), the
  // weights have their own, and one holds the routing: each row's expert, the group sizes, vkgmm's
  // status word and the workspace. Every view bound as a storage buffer (the app's own descriptor
  // included) starts at a multiple of minStorageBufferOffsetAlignment, as Vulkan requires of a
  // descriptor's offset; 256 is the largest that limit may be. Staging and readback are host-visible.
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(dev.physical, &props);
  const VkDeviceSize align = props.limits.minStorageBufferOffsetAlignment;
  const VkDeviceSize expert_bytes = p.m * sizeof(int32_t), sizes_bytes = G * sizeof(int32_t);
  const VkDeviceSize sizes_offset = align_up(expert_bytes, align);
  const VkDeviceSize status_offset = align_up(sizes_offset + sizes_bytes, align);
  const VkDeviceSize workspace_offset = align_up(status_offset + 4, align);
  const VkDeviceSize out_offset = align_up(need.lhs, 256);
  // Declared before the resources, so that it outlives their release, which first waits for the device:
  // a command buffer still pending after a failed wait uses its pipeline.
  app::CountRows count_rows(dev.device);
  Resources res(dev);  // released when run() returns or throws
  res.activations = dev.create_buffer(out_offset + need.out, false);
  res.weights = dev.create_buffer(need.rhs, false);
  res.routing = dev.create_buffer(workspace_offset + workspace_bytes, false);
  const VkDeviceSize rhs_staging_offset = align_up(need.lhs, 16);
  const VkDeviceSize expert_staging_offset = align_up(rhs_staging_offset + need.rhs, 16);
  res.staging = dev.create_buffer(expert_staging_offset + expert_bytes, true);
  res.readback = dev.create_buffer(need.out + sizes_bytes + 4, true);
  const app::AppDevice::Buffer &activations = res.activations, &weights = res.weights, &routing = res.routing;
  const app::AppDevice::Buffer &staging = res.staging, &readback = res.readback;
  auto* staged = static_cast<uint8_t*>(staging.mapped);
  std::memcpy(staged, lhs.data(), lhs.size() * sizeof(float));
  std::memcpy(staged + rhs_staging_offset, rhs_bf16.data(), rhs_bf16.size());
  std::memcpy(staged + expert_staging_offset, expert.data(), expert_bytes);

  vkgmm::GmmOperands ops;
  ops.lhs = {activations.buffer, 0, need.lhs};                         // read
  ops.rhs = {weights.buffer, 0, need.rhs};                             // read
  ops.out = {activations.buffer, out_offset, need.out};                // written, every element
  ops.group_sizes = {routing.buffer, sizes_offset, sizes_bytes};       // read (int32 [G])
  ops.workspace = {routing.buffer, workspace_offset, workspace_bytes}; // written, then read
  ops.status = {routing.buffer, status_offset, 4};                     // written (device_status bits)
  plan.check(ops);  // what record() would throw, before anything is recorded

  VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpi.queueFamilyIndex = dev.queue_family;
  app::vk(vkCreateCommandPool(dev.device, &cpi, nullptr, &res.pool), "vkCreateCommandPool");
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkCommandBufferAllocateInfo cbai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cbai.commandPool = res.pool;
  cbai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cbai.commandBufferCount = 1;
  app::vk(vkAllocateCommandBuffers(dev.device, &cbai, &cb), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  app::vk(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");

  // Pass 1 (the app's): uploads, zero group sizes for the count, and NaNs in the output so that any
  // element vkgmm missed would show.
  const VkBufferCopy lhs_copy{0, 0, need.lhs};
  const VkBufferCopy rhs_copy{rhs_staging_offset, 0, need.rhs};
  const VkBufferCopy expert_copy{expert_staging_offset, 0, expert_bytes};
  vkCmdCopyBuffer(cb, staging.buffer, activations.buffer, 1, &lhs_copy);
  vkCmdCopyBuffer(cb, staging.buffer, weights.buffer, 1, &rhs_copy);
  vkCmdCopyBuffer(cb, staging.buffer, routing.buffer, 1, &expert_copy);
  vkCmdFillBuffer(cb, routing.buffer, sizes_offset, sizes_bytes, 0);
  vkCmdFillBuffer(cb, activations.buffer, out_offset, need.out, 0x7fc00000u);

  // Transfer writes -> the count's reads and atomic adds, and vkgmm's reads (lhs, rhs) and writes (out).
  barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  // Pass 2 (the app's): the group sizes, written on the device.
  count_rows.record(cb, {routing.buffer, 0, expert_bytes}, {routing.buffer, sizes_offset, sizes_bytes},
                    static_cast<uint32_t>(p.m), static_cast<uint32_t>(G));
  // The count's writes -> vkgmm's read of the group sizes (its metadata build, a compute shader).
  barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_READ_BIT);
  // vkgmm: the metadata build (reads the sizes, writes the workspace and the status word), its own
  // barrier, then the gmm. It binds its pipeline, pushes descriptors and constants: ours are gone.
  plan.record(cb, ops);
  // vkgmm's shader writes (out, status) -> pass 3's transfer reads.
  barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_TRANSFER_READ_BIT);

  // Pass 3 (the app's): read the output, the group sizes and the status word back.
  const VkBufferCopy out_copy{out_offset, 0, need.out};
  const VkBufferCopy routing_copies[2] = {{sizes_offset, need.out, sizes_bytes},            // the sizes,
                                          {status_offset, need.out + sizes_bytes, 4}};  // then the status
  vkCmdCopyBuffer(cb, activations.buffer, readback.buffer, 1, &out_copy);
  vkCmdCopyBuffer(cb, routing.buffer, readback.buffer, 2, routing_copies);
  // Transfer writes -> host reads after the fence.
  barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_HOST_READ_BIT);
  app::vk(vkEndCommandBuffer(cb), "vkEndCommandBuffer");

  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  app::vk(vkCreateFence(dev.device, &fci, nullptr, &res.fence), "vkCreateFence");
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  app::vk(vkQueueSubmit(dev.queue, 1, &si, res.fence), "vkQueueSubmit");
  res.submitted = true;
  app::vk(vkWaitForFences(dev.device, 1, &res.fence, VK_TRUE, 600ull * 1000 * 1000 * 1000), "vkWaitForFences");

  // What the device counted, and what vkgmm made of it (0: the sizes kept the contract).
  const auto* back = static_cast<const uint8_t*>(readback.mapped);
  int32_t got_sizes[G];
  uint32_t status = 0;
  std::memcpy(got_sizes, back + need.out, sizes_bytes);
  std::memcpy(&status, back + need.out + sizes_bytes, 4);
  int64_t bad_sizes = 0;
  for (int64_t g = 0; g < G; ++g) bad_sizes += got_sizes[g] != want_sizes[g];

  // The CPU reference: rows of group g times rhs[g]; rows past the groups are zero.
  std::vector<float> out(p.m * p.n);
  std::memcpy(out.data(), back, out.size() * sizeof(float));
  double max_err = 0;
  int64_t bad = 0, row = 0;
  for (int64_t g = 0; g <= G; ++g) {
    const int64_t rows = g < G ? want_sizes[g] : p.m - row;
    for (int64_t r = row; r < row + rows; ++r)
      for (int64_t j = 0; j < p.n; ++j) {
        double want = 0;
        if (g < G)
          for (int64_t i = 0; i < p.k; ++i) want += double(lhs[r * p.k + i]) * rhs[(g * p.k + i) * p.n + j];
        const double err = std::fabs(out[r * p.n + j] - want);
        if (!(err <= 1e-4 * (1 + std::fabs(want)))) ++bad;  // also counts NaNs
        if (err > max_err) max_err = err;
      }
    row += rows;
  }

  if (bad_sizes || status != 0) {
    std::fprintf(stderr, "FAIL: group sizes counted on the device %d %d %d %d (want 50 0 90 40), status %u\n",
                 got_sizes[0], got_sizes[1], got_sizes[2], got_sizes[3], status);
    return 1;
  }
  if (bad) {
    std::fprintf(stderr, "FAIL: %lld of %lld elements differ from the CPU reference (max error %g)\n",
                 (long long)bad, (long long)out.size(), max_err);
    return 1;
  }
  std::printf("gmm on group sizes counted on the device, recorded into the app's command buffer: %lld elements "
              "match the CPU reference (max error %.2e), status word 0\n", (long long)out.size(), max_err);
  return 0;
}

// What --help prints; the example takes no options (no_options.hpp).
constexpr const char* kHelp =
    "An app with its own Vulkan device records a vkgmm grouped matmul into its own command buffer, between\n"
    "passes of its own (a shader of the app's counts the group sizes on the device), submits once and\n"
    "checks the output against a CPU loop. Exits 1 on a mismatch or any validation message.\n"
    "VKGMM_VALIDATE=1 turns the app's validation layer on (synchronization validation included).\n";

}  // namespace

int main(int argc, char** argv) {
  if (const int exit_status = handle_no_options(argc, argv, "vkgmm_example_app", kHelp); exit_status >= 0)
    return exit_status;
  const char* v = std::getenv("VKGMM_VALIDATE");
  const bool validate = v && *v && std::strcmp(v, "0") != 0;
  int status = 1;
  try {
    app::AppDevice dev(validate);
    // vkgmm's context and plan live inside run(): they are gone before the app destroys its device.
    status = run(dev);
    if (dev.validation_messages > 0) {
      std::fprintf(stderr, "FAIL: %d validation message(s)\n", dev.validation_messages.load());
      status = 1;
    }
  } catch (const vkgmm::Error& e) {
    std::fprintf(stderr, "FAIL: vkgmm: %s (%s)\n", e.what(), vkgmm::status_name(e.status()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL: %s\n", e.what());
  }
  return status;
}
