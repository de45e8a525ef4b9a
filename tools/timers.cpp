#include "timers.hpp"

#include <stdexcept>
#include <string>

namespace tool {

namespace {
void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) throw std::runtime_error(std::string(what) + " failed (VkResult " + std::to_string(r) + ")");
}
}  // namespace

GpuTimer::GpuTimer(vkgmm::Context& ctx) : ctx_(ctx) {
  if (!ctx.info().timestamps)
    throw std::runtime_error("the device's queue has no timestamp queries: the bench cannot time kernels");
  VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = 2;
  check(vkCreateQueryPool(ctx.device(), &qi, nullptr, &pool_), "vkCreateQueryPool");
}

GpuTimer::~GpuTimer() { vkDestroyQueryPool(ctx_.device(), pool_, nullptr); }

double GpuTimer::run_ms(const std::function<void(VkCommandBuffer)>& record) {
  ctx_.submit_and_wait([&](VkCommandBuffer cb) {
    vkCmdResetQueryPool(cb, pool_, 0, 2);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool_, 0);
    record(cb);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, 1);
  });
  uint64_t ticks[2] = {0, 0};
  check(vkGetQueryPoolResults(ctx_.device(), pool_, 0, 2, sizeof ticks, ticks, sizeof(uint64_t),
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults");
  return double(ticks[1] - ticks[0]) * double(ctx_.info().timestamp_period_ns) * 1e-6;
}

}  // namespace tool
