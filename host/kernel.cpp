#include "kernel.hpp"

namespace vkgmm {

void Kernel::create(Context::Impl& ctx, VkDeviceSize part_bytes) {
  if (split) {
    uint32_t shift = 0;
    while ((VkDeviceSize(4) << shift) < part_bytes) ++shift;  // words per part = 2^shift
    constants.resize(kPartShiftId + 1, 0);                     // ids in between are unused: ignored
    constants[kPartShiftId] = shift;
  }
  pipeline = ctx.pipeline(code.code, code.words, constants, split);
}

VkPipeline Kernel::for_offsets(Context::Impl& ctx, bool offsets_vec4_aligned) const {
  if (offsets_vec4_aligned || vec4_id >= constants.size() || constants[vec4_id] == 0) return pipeline;
  std::vector<uint32_t> scalar = constants;
  scalar[vec4_id] = 0;
  return ctx.pipeline(code.code, code.words, scalar, split);
}

}  // namespace vkgmm
