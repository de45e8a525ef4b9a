// Whether a plan's kernel runs on the matrix units (Schedule::matrix), for gmm and tgmm alike (internal).
#pragma once

#include <string>

#include "dispatch_plan.hpp"

namespace vkgmm {

// Why a call with these inputs cannot take the matrix schedule (empty where it can): its builds multiply
// f16 on the device's matrix units (DeviceInfo::matrix_extension), read 16-bit operands natively and
// bind each operand whole; rhs may be a block format where `rhs_blocks` (gmm's weights).
std::string matrix_refusal(const DispatchPlan& core, DType lhs, DType rhs, bool rhs_blocks,
                           const DispatchPlan::OperandLayout& layout);

// The schedule a backward's part takes from its forward's problem: the forward's, except that a part whose
// inputs the matrix units cannot take (f32 gradients, the routed passes' f32 rows) runs shared where the
// forward asked for matrix.
Schedule part_schedule(Schedule forward, DType lhs, DType rhs);

// The schedule the kernel runs, from the one resolved for the problem (`resolved`), what the problem
// asked (`requested`) and the context forces (core.options().schedule): matrix where it was asked for or
// forced, or where automatic chose shared, and the call can take it. Asked of the problem where the call
// cannot, throws Error(unsupported) with `refusal`; forced on the context, such a call runs shared.
Schedule matrix_or_fallback(const DispatchPlan& core, Schedule resolved, Schedule requested, const std::string& refusal);

}  // namespace vkgmm
