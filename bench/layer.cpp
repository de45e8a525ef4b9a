#include "layer.hpp"

namespace bench {

LayerInstance::LayerInstance(vkgmm::Context& ctx, const ModelLayer& l, const vkgmm::TilingChoice& tiling,
                             int64_t shards)
    : layer(l), up(ctx, l.up, tiling, shards), down(ctx, l.down, tiling, shards, &up) {
  plan(tiling);
}

void LayerInstance::plan(const vkgmm::TilingChoice& tiling) {
  up.plan(tiling, /*combine=*/false);
  down.plan(tiling, /*combine=*/true);
}

void LayerInstance::record(VkCommandBuffer cb) const {
  up.record(cb);
  compute_barrier(cb);  // down reads the slots up wrote
  down.record(cb);
}

std::string LayerInstance::tiling_text() const {
  const std::string u = up.tiling_text(), d = down.tiling_text();
  return u == d ? u : u + "/" + d;
}

}  // namespace bench
