// Whether a call can run on the matrix units (Schedule::matrix), for gmm and tgmm alike (internal);
// kernel_choice.cpp decides whether it does.
#pragma once

#include <string>

#include "plan_core.hpp"

namespace vkgmm {

// Why a call with these inputs cannot take the matrix schedule (empty where it can): its builds multiply
// f16 on the device's matrix units (DeviceInfo::matrix_extension), read 16-bit operands natively and
// bind each operand whole; rhs may be a block format where `rhs_blocks` (gmm's weights).
std::string matrix_refusal(const PlanCore& core, DType lhs, DType rhs, bool rhs_blocks,
                           const PlanCore::OperandLayout& layout);

// The schedule a backward's part takes from its forward's problem: the forward's, except that a part whose
// inputs the matrix units cannot take (f32 gradients, the routed passes' f32 rows) runs shared where the
// forward asked for matrix.
Schedule part_schedule(Schedule forward, DType lhs, DType rhs);

}  // namespace vkgmm
