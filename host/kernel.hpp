// A planned kernel: its module, specialization constants and pipelines (internal; the plan core's).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "context_impl.hpp"
#include "interface.hpp"
#include "shader_modules.hpp"
#include "tiling.hpp"

namespace vkgmm {

// Which offsets the kernel's 4-element loads and stores need, for the scalar variants record() takes
// where a view's offset is not a multiple of 4 elements.
struct KernelLoads {
  // VKGMM_ID_VEC4 needs rhs's offset, and with vec4_needs_lhs also lhs's, a multiple of 4 elements; an
  // optional second switch (vec4_lhs_id, needs VEC4 on) needs lhs's aligned unless vec4_lhs_any_offset
  // (the shader aligns its own loads).
  bool vec4_needs_lhs = false;
  uint32_t vec4_lhs_id = 0;  // 0: none
  bool vec4_lhs_any_offset = false;
  bool rhs_any_offset = false;  // rhs's loads need no alignment (block formats: words at any word)
  // The shader's 4-element stores (0: none): needs out's offset a multiple of 4 elements.
  uint32_t vec4_out_id = 0;
  // Set where the plan's 4-element loads fit a CPU driver's loop budget but the scalar ones VKGMM_ID_VEC4's
  // fallback takes would not (tiling.hpp, check_cpu_loop_budget): the error for_offsets throws instead.
  std::string scalar_loads_refusal;
};

struct Kernel {
  ShaderCode code{};
  // The op's declared constants (abi::kGmmConstants, ...) beside abi::kCommonConstants: set() refuses
  // any other id.
  const abi::SpecConstant* declared = nullptr;
  size_t declared_count = 0;
  std::vector<uint32_t> constants;  // constants[id] is constant_id id (ids not declared stay 0, ignored)
  std::vector<bool> is_set;         // by id: set() was called (create() refuses a declared id left unset)
  KernelLoads loads;
  bool split = false;               // the module and layout bind operands in parts
  // Split only because lhs or rhs passes one binding: the texel build reads them whole through the views
  // of vkgmm's buffers in the plain layout (its constants are the plan's); the split build serves other
  // buffers, with its 4-element loads and stores off (it reads parts a word at a time).
  bool texel_unsplit = false;
  bool storage16 = false;           // the module reads and writes 16-bit elements natively (else in words)
  VkPipeline pipeline = VK_NULL_HANDLE;  // null until first needed when there is a texel pipeline
  // The VKGMM_TEXEL build of the module (null code: none) and its pipeline with the same constants.
  ShaderCode texel_code{};
  VkPipeline texel_pipeline = VK_NULL_HANDLE;

  template <size_t N>
  void declare(const abi::SpecConstant (&table)[N]) {
    declared = table;
    declared_count = N;
  }
  // Sets constant `id`; throws Error(internal) when the module family does not declare it.
  void set(uint32_t id, uint32_t value);
  // The constants every kernel shape sets (the block, invocations, accumulators, schedule, shared sizes).
  void set_shape(const KernelShape& s);
  // Picks `code` (and `texel_code` where the inputs can be read through texel views) for op with these
  // element types; `split` and `texel_unsplit` must be set first.
  void choose_modules(Op op, const DeviceInfo& info, const ResolvedOptions& options, DType lhs, DType rhs, DType out);
  // Sets PART_SHIFT for split kernels and creates (or finds) the pipelines.
  void create(Context::Impl& ctx, VkDeviceSize part_bytes);
  // The planned pipeline (the texel one with `texel`); where it uses 4-element loads or stores of an
  // operand whose offset (in elements, as pushed) is not a multiple of 4, the same kernel with those
  // loads or stores scalar.
  VkPipeline for_offsets(Context::Impl& ctx, uint32_t lhs_offset, uint32_t rhs_offset, uint32_t out_offset,
                         bool texel = false) const;
};

}  // namespace vkgmm
