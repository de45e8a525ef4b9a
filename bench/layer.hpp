// A model's MoE layer on the device (bench/models.hpp): its gate/up and down projections as two routed
// instances, the down one reading the gate/up one's per-slot output buffer, recorded into one command
// buffer with a barrier between them, as an engine runs the layer.
#pragma once

#include <vector>

#include "models.hpp"
#include "routed.hpp"

namespace bench {

class LayerInstance {
 public:
  // Plans both projections (windows of experts as RoutedInstance picks them) and uploads their inputs.
  LayerInstance(vkgmm::Context& ctx, const ModelLayer& layer, const vkgmm::TilingChoice& tiling, int64_t shards = 0);
  void plan(const vkgmm::TilingChoice& tiling);
  void record(VkCommandBuffer cb) const;  // up, barrier, down
  std::string tiling_text() const;        // "up/down" when they differ

  const ModelLayer& layer;
  RoutedInstance up, down;
};

}  // namespace bench
