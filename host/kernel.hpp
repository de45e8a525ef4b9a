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
struct VectorAlignment {
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
  // fallback takes would not (tiling.hpp, check_cpu_loop_budget): the error variant_for throws instead.
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
  VectorAlignment alignment;
  bool split = false;               // the module and layout bind operands in parts
  // Split only because lhs or rhs passes one binding: the texel build reads them whole through the views
  // of vkgmm's buffers in the plain layout (its constants are the plan's); the split build serves other
  // buffers, with its 4-element loads and stores off (it reads parts a word at a time).
  bool texel_unsplit = false;
  bool storage16 = false;           // the module reads and writes 16-bit elements natively (else in words)
  bool matrix = false;              // gmm's matrix build (set_shape: the shape is a matrix schedule's)
  bool subgroup_slices = false;     // the build that sums K slices with subgroup shuffles (gmm's)
  // The VKGMM_TEXEL build of the module (null code: none), with the same constants.
  ShaderCode texel_code{};

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

  // Which pipeline a record() binds: the build, and which 4-element switches it turns off for operand
  // offsets that are not multiples of 4 elements (the split build's loads are words: its switches off).
  enum Vec4Off : uint8_t { kLoadsOff = 1, kLhsLoadsOff = 2, kStoresOff = 4, kVec4OffCombinations = 8 };
  struct Variant {
    bool texel = false;  // the VKGMM_TEXEL build (else `code`)
    uint8_t off = 0;     // Vec4Off bits
  };
  // The variant these operand offsets (in elements, as pushed) take; throws Error(unsupported) with
  // alignment.scalar_loads_refusal where they need scalar loads that the plan cannot run.
  Variant variant_for(uint32_t lhs_offset, uint32_t rhs_offset, uint32_t out_offset, bool texel) const;
  // Sets PART_SHIFT for split kernels and compiles the pipeline vkgmm's own buffers take at aligned
  // offsets; with `every_variant`, also each other one variant_for can return, so that record() never
  // compiles (ContextOptions::eager_pipelines).
  void create(Context::Impl& ctx, VkDeviceSize part_bytes, bool every_variant);
  // The pipeline of a variant: compiled by create(), else compiled (and cached by the context) now.
  VkPipeline pipeline(Context::Impl& ctx, const Variant& v) const;
  // The variant create() compiles first: the texel build where there is one.
  Variant planned() const { return {texel_code.code != nullptr, 0}; }

 private:
  std::vector<uint32_t> constants_for(uint8_t off) const;
  bool on(uint32_t id) const { return id != 0 && id < constants.size() && constants[id] != 0; }
  VkPipeline compile(Context::Impl& ctx, const Variant& v) const;
  // By [texel][off]: what create() compiled (null: not yet).
  VkPipeline pipelines_[2][kVec4OffCombinations] = {};
};

}  // namespace vkgmm
