// The one workspace a plan made of other plans hands out (internal): each part's share and each of the
// composite's own areas is a region taken in order, every region at a storage-binding offset, so that any
// of them can be bound on its own. MoeLayerPlan, GmmBackwardPlan and the routed backward lay theirs out
// with it; a plan that is a part of another is told so when it is made (WorkspaceOwner), and allocates none.
#pragma once

#include <algorithm>
#include <string>

#include <vulkan/vulkan.h>

#include "vkgmm/context.hpp"
#include "vkgmm/types.hpp"  // Error

namespace vkgmm {

// Who allocates a plan's workspace: the plan itself (for an app that gives none); the composite it is a
// part of, which always gives it its region; or the app, which gives every record() one
// (ContextOptions::app_workspaces), so that a record() without one is the app's error.
enum class WorkspaceOwner { self, composite, app };
// The owner of a plan the app makes on `ctx`.
inline WorkspaceOwner app_plan_owner(const Context& ctx) {
  return ctx.options().app_workspaces ? WorkspaceOwner::app : WorkspaceOwner::self;
}
// Why such a plan requires a workspace view (the operand table's rule), and the refusal of a record() or
// check() without one by the plans that check it themselves (the composites, saved_pre_activation).
inline constexpr const char* kNoOwnWorkspace = "the plan has none of its own (ContextOptions::app_workspaces)";
[[noreturn]] inline void refuse_missing_workspace(const std::string& op) {
  throw Error(Status::invalid_argument, op + ": workspace: " + kNoOwnWorkspace + " but no view was given");
}

class WorkspaceArena {
 public:
  struct Region {
    VkDeviceSize offset = 0, bytes = 0;
    // This region of `whole` (the workspace the composite was given or owns).
    BufferView in(const BufferView& whole) const { return {whole.buffer, whole.offset + offset, bytes}; }
  };

  explicit WorkspaceArena(const DeviceInfo& info)
      : align_(std::max<VkDeviceSize>(info.min_storage_buffer_offset_alignment, 4)) {}

  // The next `bytes`; an empty region takes no space (its view, of no bytes, is never bound).
  Region take(VkDeviceSize bytes) {
    const Region r{bytes_, bytes};
    if (bytes) bytes_ = (bytes_ + bytes + align_ - 1) / align_ * align_;
    return r;
  }
  // What the composite's workspace_bytes() reports: every region taken so far.
  VkDeviceSize bytes() const { return bytes_; }

 private:
  VkDeviceSize align_;
  VkDeviceSize bytes_ = 0;
};

}  // namespace vkgmm
