// Context::Impl: the parts a Context is made of, shared by its buffers, plans and pipelines (internal).
// Each part has a small interface of its own; the Impl only holds them and tears them down in order.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "buffer_registry.hpp"
#include "device.hpp"
#include "pipeline_cache.hpp"
#include "staging_cache.hpp"
#include "submitter.hpp"
#include "tiling_device.hpp"
#include "validation_log.hpp"
#include "vkgmm/context.hpp"
#include "vkgmm/plan_pipelines.hpp"

namespace vkgmm {

struct Context::Impl {
  Device dev;
  ValidationLog log;
  PipelineCache pipelines;
  BufferRegistry buffers;
  Submitter submitter{dev};
  StagingCache staging;  // staged copies' host-visible buffer, kept for the next copy
  TilingDevice tiling_device;  // test-only (tiling_device.hpp)

  Impl() = default;
  Impl(const Impl&) = delete;
  // Settles parked work (bounded), then destroys the pipelines, the kept staging buffer and, when vkgmm
  // owns it, the device.
  ~Impl();

  // The pipeline of `code` with these constants (PipelineCache::get on this device).
  VkPipeline pipeline(const uint32_t* code, size_t words, const std::vector<uint32_t>& constants,
                      bool split = false, MatrixSubgroup subgroup = {}) {
    return pipelines.get(dev.device, code, words, constants, split, subgroup);
  }
};

// How vkgmm's own code reaches a Context's parts (the public header names no internal type).
struct ContextInternals {
  static Context::Impl& of(const Context& c) { return *c.impl_; }
  static std::shared_ptr<Context::Impl> shared(const Context& c) { return c.impl_; }
  static Context adopt(std::shared_ptr<Context::Impl> impl) { return Context(std::move(impl)); }
};

// Creates the instance and device of a Context vkgmm owns into `im`, with these options (Context's
// constructor; open_compile_only).
void open_owned_device(Context::Impl& im, ResolvedOptions options);
// open_compile_only: vkgmm/plan_pipelines.hpp.

// Validation messages that arrive while a Context is destroyed (vkDestroyDevice and vkDestroyInstance
// report leaked objects) cannot be thrown: they are echoed to stderr and kept process-wide here, where
// the tests collect them. Returns and clears them.
void report_teardown_messages(std::vector<std::string> messages);
std::vector<std::string> take_teardown_messages();

}  // namespace vkgmm
