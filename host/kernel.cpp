#include "kernel.hpp"

#include <string>

#include "texel_views.hpp"

namespace vkgmm {

void Kernel::set(uint32_t id, uint32_t value) {
  bool known = split && id == abi::kSplitConstant.id;
  for (const abi::SpecConstant& c : abi::kMatrixConstants) known = known || (matrix && c.id == id);
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
  set(VKGMM_ID_STAGES, s.stages);
  matrix = s.matrix;
  if (matrix) {
    set(VKGMM_ID_MATRIX_M, s.cm_m);
    set(VKGMM_ID_MATRIX_N, s.cm_n);
    set(VKGMM_ID_MATRIX_K, s.cm_k);
    set(VKGMM_ID_MATRIX_SG_M, s.sg_m);
    set(VKGMM_ID_MATRIX_SG_N, s.sg_n);
  }
}

void Kernel::choose_modules(Op op, const DeviceInfo& info, const ResolvedOptions& options, DType lhs, DType rhs,
                            DType out) {
  const bool any16 = lhs != DType::f32 || rhs != DType::f32 || out != DType::f32;
  const bool blocks = is_quantized(rhs);
  if (matrix) {
    // The plan took the matrix schedule only where its build runs (16-bit storage, unsplit operands).
    code = matrix_shader_for(op, info, blocks);
    storage16 = true;
    return;
  }
  code = shader_for(op, info, options.storage16, any16, split, subgroup_slices, blocks);
  storage16 = !split && use_storage16(info, options.storage16, any16);
  // One binding rule for both builds of a split plan: no 16-bit storage (out is bound in words).
  if ((!split || texel_unsplit) && texel_loads_usable(info, options.texel_loads, lhs, rhs))
    texel_code = texel_shader_for(op, info, options.storage16 && !split, any16, blocks);
}

void Kernel::create(Context::Impl& ctx, VkDeviceSize part_bytes, bool every_variant) {
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
  if (matrix)
    for (const abi::SpecConstant& c : abi::kMatrixConstants) require_set(c);
  // vkgmm's own buffers at aligned offsets take the planned variant: compiled first, so a plan that
  // cannot be compiled fails before the rest.
  const Variant first = planned();
  pipelines_[first.texel][0] = compile(ctx, first);
  if (!every_variant) return;
  // Every offset pattern of every build a record() can bind (the plain build serves buffers without
  // texel views), except the patterns variant_for refuses.
  for (const bool texel : {false, true}) {
    if (texel && !texel_code.code) continue;
    for (uint32_t misaligned = 0; misaligned < 8; ++misaligned) {
      const uint32_t lhs = misaligned & 1, rhs = (misaligned >> 1) & 1, out = (misaligned >> 2) & 1;
      if (rhs && alignment.rhs_any_offset) continue;  // never a separate variant
      Variant v;
      try {
        v = variant_for(lhs, rhs, out, texel);
      } catch (const Error&) {
        continue;
      }
      if (!pipelines_[v.texel][v.off]) pipelines_[v.texel][v.off] = compile(ctx, v);
    }
  }
}

Kernel::Variant Kernel::variant_for(uint32_t lhs_offset, uint32_t rhs_offset, uint32_t out_offset, bool texel) const {
  const bool lhs_ok = lhs_offset % 4 == 0, rhs_ok = alignment.rhs_any_offset || rhs_offset % 4 == 0;
  const bool parts = split && !texel;  // the split build: its loads are words (kernel.hpp, texel_unsplit)
  const bool loads_off = on(VKGMM_ID_VEC4) && (parts || !rhs_ok || (alignment.vec4_needs_lhs && !lhs_ok));
  const bool lhs_loads_off = on(alignment.vec4_lhs_id) && (loads_off || (!lhs_ok && !alignment.vec4_lhs_any_offset));
  // The stores' groups of 4 columns are the 4-element loads' (or the shared schedule's): off with them.
  const bool stores_off = on(alignment.vec4_out_id) && (out_offset % 4 != 0 || (loads_off && !on(VKGMM_ID_USE_SHARED)));
  if (loads_off && !alignment.scalar_loads_refusal.empty()) throw Error(Status::unsupported, alignment.scalar_loads_refusal);
  Variant v;
  v.texel = texel;
  v.off = uint8_t((loads_off ? kLoadsOff : 0) | (lhs_loads_off ? kLhsLoadsOff : 0) | (stores_off ? kStoresOff : 0));
  return v;
}

std::vector<uint32_t> Kernel::constants_for(uint8_t off) const {
  std::vector<uint32_t> c = constants;
  if (off & kLoadsOff) c[VKGMM_ID_VEC4] = 0;
  if (off & kLhsLoadsOff) c[alignment.vec4_lhs_id] = 0;
  if (off & kStoresOff) c[alignment.vec4_out_id] = 0;
  return c;
}

VkPipeline Kernel::compile(Context::Impl& ctx, const Variant& v) const {
  const ShaderCode& c = v.texel ? texel_code : code;
  return ctx.pipeline(c.code, c.words, constants_for(v.off), split && !v.texel, matrix ? ctx.dev.matrix_subgroup : MatrixSubgroup{});
}

VkPipeline Kernel::pipeline(Context::Impl& ctx, const Variant& v) const {
  if (const VkPipeline made = pipelines_[v.texel][v.off]) return made;
  return compile(ctx, v);
}

}  // namespace vkgmm
