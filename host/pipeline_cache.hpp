// The pipelines of a Context (internal; a part of Context::Impl): the two descriptor layouts every
// vkgmm module binds to, and one VkPipeline per (module, specialization constants), made on first use.
#pragma once

#include <vulkan/vulkan.h>

#include <map>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "interface.h"
#include "matrix_units.hpp"
#include "op.hpp"

namespace vkgmm {

// The one descriptor layout of every vkgmm pipeline (shaders/interface.h): storage buffers at these
// bindings, pushed with vkCmdPushDescriptorSetKHR.
enum Binding : uint32_t {
  kLhs = VKGMM_BINDING_LHS,
  kRhs = VKGMM_BINDING_RHS,
  kOut = VKGMM_BINDING_OUT,
  kExisting = VKGMM_BINDING_EXISTING,
  kMeta = VKGMM_BINDING_META,
  kBias = VKGMM_BINDING_BIAS,
  kNumBindings = VKGMM_NUM_BINDINGS
};
// The plain layout also holds texel views of lhs and rhs (uniform texel buffers), which only the
// VKGMM_TEXEL modules declare and only their pipelines push.
enum TexelBinding : uint32_t {
  kLhsTexel = VKGMM_BINDING_LHS_TEXEL,
  kRhsTexel = VKGMM_BINDING_RHS_TEXEL,
  kNumPlainBindings = VKGMM_NUM_PLAIN_BINDINGS
};
// The split layout (VKGMM_SPLIT modules): operands larger than one binding may address are bound as up
// to kMaxParts parts; part p > 0 of operand o (kLhs..kExisting) is at binding kNumBindings + 3 * o + p - 1.
constexpr uint32_t kMaxParts = VKGMM_MAX_PARTS;
constexpr uint32_t kNumSplitBindings = VKGMM_NUM_SPLIT_BINDINGS;
static_assert(kNumSplitBindings == kNumBindings + 4 * (kMaxParts - 1));
static_assert(uint32_t(kLhsTexel) == uint32_t(kNumBindings) && uint32_t(kNumPlainBindings) == kNumBindings + 2u);
// Both layouts end with gmm's bindings for the routing it reads in the kernel: the router weights, the
// status word and the ids or group sizes, storage buffers past the split layout's parts (so at the same
// numbers in each).
enum RouteBinding : uint32_t {
  kRouteWeights = VKGMM_BINDING_ROUTE_WEIGHTS,
  kRouteStatus = VKGMM_BINDING_ROUTE_STATUS,
  kRouteReads = VKGMM_BINDING_ROUTE_READS,
  kRouteWorkspace = VKGMM_BINDING_ROUTE_WORKSPACE,
};
constexpr uint32_t kNumRouteBindings = VKGMM_NUM_ROUTE_BINDINGS;
static_assert(uint32_t(kRouteWeights) == kNumSplitBindings && uint32_t(kRouteStatus) == kNumSplitBindings + 1 &&
              uint32_t(kRouteReads) == kNumSplitBindings + 2 && uint32_t(kRouteWorkspace) == kNumSplitBindings + 3 &&
              kNumRouteBindings == 4);
// Every layout's bindings are pushed: Vulkan guarantees maxPushDescriptors >= 32.
static_assert(kNumSplitBindings + kNumRouteBindings <= 32);
// The leading bindings of a layout, 0 .. binding_count(split) - 1: the plain layout (kNumPlainBindings) or
// the split one; the route bindings follow either.
inline uint32_t binding_count(bool split) { return split ? kNumSplitBindings : kNumPlainBindings; }
inline bool layout_has_binding(uint32_t binding, bool split) {
  return binding < binding_count(split) || (binding >= kRouteWeights && binding < kRouteWeights + kNumRouteBindings);
}
// Whether an op's module declares `binding` writable: out (with its parts), gmm's status word and routed
// workspace, tgmm's chunk slots (the interface test checks this against every module's SPIR-V). A binding
// a dispatch leaves unused takes out's view where its module declares it writable, which the op writes
// anyway, so that synchronization validation sees no other buffer written; a read-only view elsewhere.
inline bool declares_writable(Op op, uint32_t binding) {
  const bool out_part = binding >= kNumBindings + 3 * kOut && binding < kNumBindings + 3 * kOut + kMaxParts - 1;
  if (binding == kOut || out_part) return true;
  if (op == Op::gmm) return binding == kRouteStatus || binding == kRouteWorkspace;
  return binding == VKGMM_BINDING_TGMM_PARTIAL;
}
// What the host's layouts declare at `binding` (one layout_has_binding says it has).
inline VkDescriptorType binding_type(uint32_t binding, bool split) {
  const bool texel = !split && (binding == kLhsTexel || binding == kRhsTexel);
  return texel ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
}


// A module's specialization constants as PipelineCache::get takes them (element i is constant_id i):
// the {id, value} pairs given, every other id up to the largest given 0.
inline std::vector<uint32_t> spec_constants(const std::vector<std::pair<uint32_t, uint32_t>>& values) {
  std::vector<uint32_t> out;
  for (const auto& [id, value] : values) {
    if (out.size() <= id) out.resize(id + 1, 0);
    out[id] = value;
  }
  return out;
}

class PipelineCache {
 public:
  // The plain layout (storage buffers and the inputs' texel views) and the split one (operands in
  // parts), both pushed with vkCmdPushDescriptorSetKHR, and a VkPipelineCache.
  // `flags` go to every pipeline's creation (a compile-only context's capture bits). With
  // `reverse_subgroups` (ResolvedOptions::reverse_subgroups), every pipeline whose workgroup is whole
  // subgroups of `subgroup_size` gets VKGMM_ID_REVERSE_SUBGROUPS set (shaders/invocation.glsl).
  void init(VkDevice device, VkPipelineCreateFlags flags = 0, bool reverse_subgroups = false,
            uint32_t subgroup_size = 0);
  void destroy(VkDevice device);
  // `split`: the module was built with VKGMM_SPLIT and binds the split layout. constants[i] is
  // constant_id i (ids the module does not declare are ignored). `subgroup`: the
  // subgroup size the pipeline requires and whether its subgroups are full (VK_EXT_subgroup_size_control,
  // which the device must have enabled; gmm's matrix builds tile the workgroup by subgroup, and a KHR
  // cooperative matrix in a SPIR-V 1.5 module needs full subgroups); none by default.
  VkPipeline get(VkDevice device, const uint32_t* code, size_t words, const std::vector<uint32_t>& constants,
                 bool split = false, MatrixSubgroup subgroup = {});
  VkPipelineLayout layout(bool split) const { return split ? split_layout_ : layout_; }
  // Pipelines made so far (tests: which record() variants compile a pipeline of their own, and what
  // planning compiled).
  size_t size() {
    std::lock_guard lock(mutex_);
    return pipelines_.size();
  }
  std::vector<VkPipeline> made() {
    std::lock_guard lock(mutex_);
    std::vector<VkPipeline> out;
    for (const auto& entry : pipelines_) out.push_back(entry.second);
    return out;
  }

 private:
  struct Key {
    const uint32_t* code = nullptr;
    std::vector<uint32_t> constants;
    MatrixSubgroup subgroup;
    bool operator<(const Key& o) const {
      return std::tie(code, constants, subgroup.size, subgroup.required, subgroup.full) <
             std::tie(o.code, o.constants, o.subgroup.size, o.subgroup.required, o.subgroup.full);
    }
  };
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE, split_set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE, split_layout_ = VK_NULL_HANDLE;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  VkPipelineCreateFlags flags_ = 0;
  uint32_t reverse_subgroup_size_ = 0;  // the device's subgroup size where subgroups are reversed, else 0
  // The pipeline of this module and these constants, compiled (get's first use, outside the lock).
  VkPipeline create(VkDevice device, const uint32_t* code, size_t words, const std::vector<uint32_t>& constants,
                    bool split, MatrixSubgroup subgroup) const;
  std::mutex mutex_;  // guards pipelines_ (lookups and stores; pipelines are compiled outside it)
  std::map<Key, VkPipeline> pipelines_;
};

}  // namespace vkgmm
