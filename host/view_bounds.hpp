// Operand views must lie inside their buffers (internal).
#pragma once

#include <initializer_list>
#include <utility>

#include "context_impl.hpp"

namespace vkgmm {

// Throws Error(invalid_argument) naming `op` and the operand when a view runs past the end of its buffer.
// Exact for buffers made by Context::create_buffer; for the app's own buffers the bound is the buffer's
// memory requirement (its size rounded up to the driver's alignment), the tightest Vulkan can tell.
// Null buffers are skipped (other checks name them).
void check_views_in_buffers(const Context::Impl& ctx, const char* op,
                            std::initializer_list<std::pair<const char*, BufferView>> views);

}  // namespace vkgmm
