// The C API's handles and its one error path (internal): every entry point runs its body through
// guarded(), so no exception crosses into C and each failure leaves a status and a message.
#pragma once

#include <memory>
#include <new>
#include <string>
#include <utility>

#include "vkgmm/ops.hpp"
#include "vkgmm/vkgmm.h"

struct vkgmm_context {
  vkgmm::Context ctx;
};

struct vkgmm_buffer {
  vkgmm::Buffer buffer;
};

// Plans remember their context's device, so *_run can refuse a context the plan was not made on.
struct vkgmm_gmm_plan {
  vkgmm::GmmPlan plan;
  std::shared_ptr<vkgmm::Context::Impl> owner;
};

struct vkgmm_tgmm_plan {
  vkgmm::TgmmPlan plan;
  std::shared_ptr<vkgmm::Context::Impl> owner;
};

struct vkgmm_gmm_backward_plan {
  vkgmm::GmmBackwardPlan plan;
  std::shared_ptr<vkgmm::Context::Impl> owner;
};

namespace vkgmm::c_api {

void clear_error() noexcept;
vkgmm_status set_error(vkgmm_status status, const char* message) noexcept;
vkgmm_status to_c(Status s) noexcept;
Status from_c(vkgmm_status s) noexcept;

// Throws Error(invalid_argument) naming `what` when p is null.
void require(const void* p, const char* what);

template <class F>
vkgmm_status guarded(F&& body) noexcept {
  clear_error();
  try {
    body();
    return VKGMM_OK;
  } catch (const Error& e) {
    return set_error(to_c(e.status()), e.what());
  } catch (const std::bad_alloc&) {
    return set_error(VKGMM_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return set_error(VKGMM_INTERNAL, e.what());
  } catch (...) {
    return set_error(VKGMM_INTERNAL, "unknown exception");
  }
}

}  // namespace vkgmm::c_api
