// An app that owns its Vulkan device and buffers, and records a vkgmm grouped matmul into its own
// command buffer between two passes of its own:
//   pass 1 (transfer): upload lhs and rhs from a staging buffer; poison the output with NaNs
//   vkgmm:             out = gmm(lhs, rhs, group_sizes)            (recorded, not submitted, by vkgmm)
//   pass 2 (transfer): copy the output to a readback buffer
// then submits once, checks the result against a CPU loop and fails on any validation message.
// Run with VKGMM_VALIDATE=1 to turn on the app's validation layer (the tests do).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <vkgmm/vkgmm.hpp>

#include "app_device.hpp"

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

int run(app::AppDevice& dev) {
  // The problem: 4 experts, one of them empty, and rows past sum(group_sizes) that must come out zero.
  // Activations f32, expert weights bf16 (half the bytes), output f32.
  vkgmm::GmmProblem p;
  p.m = 200;
  p.k = 96;
  p.n = 80;
  p.group_sizes = {50, 0, 90, 40};
  p.lhs_type = vkgmm::DType::f32;
  p.rhs_type = vkgmm::DType::bf16;
  p.out_type = vkgmm::DType::f32;
  const int64_t G = static_cast<int64_t>(p.group_sizes.size());

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

  // Plan: checks the problem, uploads the group metadata (its workspace, held by the plan).
  vkgmm::GmmPlan plan(ctx, p);
  const vkgmm::OperandSizes need = plan.sizes();
  std::printf("device: %s; tiling %lldx%lldx%lld; metadata %llu bytes\n", ctx.info().name.c_str(),
              (long long)plan.tiling().tm, (long long)plan.tiling().tk, (long long)plan.tiling().tn,
              (unsigned long long)plan.metadata_bytes());

  // The app's buffers: activations and output share one device-local buffer (views at offsets),
  // the weights have their own; staging and readback are host-visible.
  const VkDeviceSize out_offset = align_up(need.lhs, 256);
  app::AppDevice::Buffer activations = dev.create_buffer(out_offset + need.out, false);
  app::AppDevice::Buffer weights = dev.create_buffer(need.rhs, false);
  const VkDeviceSize rhs_staging_offset = align_up(need.lhs, 16);
  app::AppDevice::Buffer staging = dev.create_buffer(rhs_staging_offset + need.rhs, true);
  app::AppDevice::Buffer readback = dev.create_buffer(need.out, true);
  std::memcpy(staging.mapped, lhs.data(), lhs.size() * sizeof(float));
  std::memcpy(static_cast<uint8_t*>(staging.mapped) + rhs_staging_offset, rhs_bf16.data(), rhs_bf16.size());

  const vkgmm::GmmOperands ops{
      {activations.buffer, 0, need.lhs},           // lhs: read
      {weights.buffer, 0, need.rhs},               // rhs: read
      {activations.buffer, out_offset, need.out},  // out: written, every element
      {}};                                         // no existing_out

  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpi.queueFamilyIndex = dev.queue_family;
  app::vk(vkCreateCommandPool(dev.device, &cpi, nullptr, &pool), "vkCreateCommandPool");
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkCommandBufferAllocateInfo cbai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cbai.commandPool = pool;
  cbai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cbai.commandBufferCount = 1;
  app::vk(vkAllocateCommandBuffers(dev.device, &cbai, &cb), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  app::vk(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");

  // Pass 1 (the app's): uploads, and NaNs in the output so that any element vkgmm missed would show.
  const VkBufferCopy lhs_copy{0, 0, need.lhs};
  const VkBufferCopy rhs_copy{rhs_staging_offset, 0, need.rhs};
  vkCmdCopyBuffer(cb, staging.buffer, activations.buffer, 1, &lhs_copy);
  vkCmdCopyBuffer(cb, staging.buffer, weights.buffer, 1, &rhs_copy);
  vkCmdFillBuffer(cb, activations.buffer, out_offset, need.out, 0x7fc00000u);

  // Transfer writes -> vkgmm's shader reads (lhs, rhs) and writes (out).
  barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  plan.record(cb, ops);  // binds its pipeline, pushes descriptors and constants, dispatches
  // vkgmm's shader writes -> pass 2's transfer read.
  barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_TRANSFER_READ_BIT);

  // Pass 2 (the app's): read the output back.
  const VkBufferCopy out_copy{out_offset, 0, need.out};
  vkCmdCopyBuffer(cb, activations.buffer, readback.buffer, 1, &out_copy);
  // Transfer writes -> host reads after the fence.
  barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_HOST_READ_BIT);
  app::vk(vkEndCommandBuffer(cb), "vkEndCommandBuffer");

  VkFence fence = VK_NULL_HANDLE;
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  app::vk(vkCreateFence(dev.device, &fci, nullptr, &fence), "vkCreateFence");
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  app::vk(vkQueueSubmit(dev.queue, 1, &si, fence), "vkQueueSubmit");
  app::vk(vkWaitForFences(dev.device, 1, &fence, VK_TRUE, 600ull * 1000 * 1000 * 1000), "vkWaitForFences");

  // The CPU reference: rows of group g times rhs[g]; rows past the groups are zero.
  std::vector<float> out(p.m * p.n);
  std::memcpy(out.data(), readback.mapped, out.size() * sizeof(float));
  double max_err = 0;
  int64_t bad = 0, row = 0;
  for (int64_t g = 0; g <= G; ++g) {
    const int64_t rows = g < G ? p.group_sizes[g] : p.m - row;
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

  vkDestroyFence(dev.device, fence, nullptr);
  vkDestroyCommandPool(dev.device, pool, nullptr);
  for (auto* b : {&activations, &weights, &staging, &readback}) dev.destroy_buffer(*b);
  if (bad) {
    std::fprintf(stderr, "FAIL: %lld of %lld elements differ from the CPU reference (max error %g)\n",
                 (long long)bad, (long long)out.size(), max_err);
    return 1;
  }
  std::printf("gmm recorded into the app's command buffer: %lld elements match the CPU reference "
              "(max error %.2e)\n", (long long)out.size(), max_err);
  return 0;
}

}  // namespace

int main() {
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
