#include "kernel.hpp"

#include <string>

#include "texel_views.hpp"

namespace vkgmm {

void Kernel::set(uint32_t id, uint32_t value) {
  bool known = split && id == abi::kSplitConstant.id;
  for (const abi::SpecConstant& c : abi::kCommonConstants) known = known || c.id == id;
  for (size_t i = 0; i < declared_count && !known; ++i) known = declared[i].id == id;
  if (!known) throw Error(Status::internal, "specialization constant " + std::to_string(id) + " is not declared");
  if (constants.size() <= id) constants.resize(id + 1, 0), is_set.resize(id + 1, false);
  constants[id] = value;
  is_set[id] = true;
}

void Kernel::set_shape(const KernelShape& s) {
  set(VKGMM_ID_INVOCATIONS, s.invocations());
  set(VKGMM_ID_BLOCK_ROWS, s.rows);
  set(VKGMM_ID_STEP, s.step);
  set(VKGMM_ID_BLOCK_COLS, s.cols);
  set(VKGMM_ID_TX, s.tx);
  set(VKGMM_ID_TY, s.ty);
  set(VKGMM_ID_ROWS_PER_INV, s.rm);
  set(VKGMM_ID_COLS_PER_INV, s.rn);
  set(VKGMM_ID_USE_SHARED, s.use_shared);
  set(VKGMM_ID_SHARED_A, s.shared_a);
  set(VKGMM_ID_SHARED_B, s.shared_b);
}

void Kernel::choose_modules(Op op, const DeviceInfo& info, const ResolvedOptions& options, DType lhs, DType rhs,
                            DType out) {
  const bool any16 = lhs != DType::f32 || rhs != DType::f32 || out != DType::f32;
  code = shader_for(op, info, options.storage16, any16, split);
  storage16 = !split && use_storage16(info, options.storage16, any16);
  // One binding rule for both builds of a split plan: no 16-bit storage (out is bound in words).
  if ((!split || texel_unsplit) && texel_loads_usable(info, options.texel_loads, lhs, rhs))
    texel_code = texel_shader_for(op, info, options.storage16 && !split, any16);
}

void Kernel::create(Context::Impl& ctx, VkDeviceSize part_bytes) {
  if (split) {
    uint32_t shift = 0;
    while ((VkDeviceSize(4) << shift) < part_bytes) ++shift;  // words per part = 2^shift
    set(VKGMM_ID_PART_SHIFT, shift);
  }
  // A declared constant the plan forgot would run with 0, silently: refuse it here instead.
  auto require_set = [&](const abi::SpecConstant& c) {
    if (c.id >= is_set.size() || !is_set[c.id])
      throw Error(Status::internal, std::string("specialization constant ") + (c.name ? c.name : "local size") +
                                        " (id " + std::to_string(c.id) + ") was not set");
  };
  for (const abi::SpecConstant& c : abi::kCommonConstants) require_set(c);
  for (size_t i = 0; i < declared_count; ++i) require_set(declared[i]);
  // Only the pipeline vkgmm's own buffers will use is compiled now (compiling is slow on CPU drivers);
  // for_offsets compiles the other on first use.
  if (texel_code.code)
    texel_pipeline = ctx.pipeline(texel_code.code, texel_code.words, constants, false);
  else
    pipeline = ctx.pipeline(code.code, code.words, constants, split);
}

VkPipeline Kernel::for_offsets(Context::Impl& ctx, uint32_t lhs_offset, uint32_t rhs_offset, uint32_t out_offset,
                               bool texel) const {
  const ShaderCode& c = texel ? texel_code : code;
  auto on = [&](uint32_t id) { return id != 0 && id < constants.size() && constants[id] != 0; };
  const bool lhs_ok = lhs_offset % 4 == 0, rhs_ok = loads.rhs_any_offset || rhs_offset % 4 == 0;
  const bool parts = split && !texel;  // the split build: its loads are words (kernel.hpp, texel_unsplit)
  const bool vec4_off = on(VKGMM_ID_VEC4) && (parts || !rhs_ok || (loads.vec4_needs_lhs && !lhs_ok));
  const bool vec4_lhs_off = on(loads.vec4_lhs_id) && (vec4_off || (!lhs_ok && !loads.vec4_lhs_any_offset));
  // The stores' groups of 4 columns are the 4-element loads' (or the shared schedule's): off with them.
  const bool vec4_out_off = on(loads.vec4_out_id) && (out_offset % 4 != 0 || (vec4_off && !on(VKGMM_ID_USE_SHARED)));
  if (vec4_off && !loads.scalar_loads_refusal.empty()) throw Error(Status::unsupported, loads.scalar_loads_refusal);
  const VkPipeline planned = texel ? texel_pipeline : pipeline;
  if (!vec4_off && !vec4_lhs_off && !vec4_out_off && planned) return planned;
  std::vector<uint32_t> adjusted = constants;
  if (vec4_off) adjusted[VKGMM_ID_VEC4] = 0;
  if (vec4_lhs_off) adjusted[loads.vec4_lhs_id] = 0;
  if (vec4_out_off) adjusted[loads.vec4_out_id] = 0;
  return ctx.pipeline(c.code, c.words, adjusted, parts);
}

}  // namespace vkgmm
