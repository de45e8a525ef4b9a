#include "matrix_schedule.hpp"

#include "shader_modules.hpp"

namespace vkgmm {

std::string matrix_refusal(const PlanCore& core, DType lhs, DType rhs, bool rhs_blocks,
                           const PlanCore::OperandLayout& layout) {
  const DeviceInfo& info = core.info();
  const std::string why = std::string(core.name()) + ": schedule matrix: ";
  if (info.matrix_extension.empty())
    return why + info.name + " has no matrix units vkgmm uses (DeviceInfo::matrix_extension)";
  if (lhs != DType::f16) return why + "lhs is " + dtype_name(lhs) + "; the matrix units take f16 inputs";
  if (rhs != DType::f16 && !(rhs_blocks && is_quantized(rhs)))
    return why + "rhs is " + dtype_name(rhs) + "; the matrix schedule takes f16" +
           (rhs_blocks ? " or a block format" : "");
  if (!use_storage16(info, core.options().storage16, true)) return why + "16-bit storage is off (ContextOptions::storage16)";
  if (layout.split) return why + "an operand is larger than one binding (maxStorageBufferRange) and bound in parts";
  return {};
}

Schedule part_schedule(Schedule forward, DType lhs, DType rhs) {
  const bool f16_inputs = lhs == DType::f16 && (rhs == DType::f16 || is_quantized(rhs));
  return forward == Schedule::matrix && !f16_inputs ? Schedule::shared : forward;
}

}  // namespace vkgmm
