// The ops vkgmm's plans run (internal): each is one shader source and one per-op plan part.
#pragma once

namespace vkgmm {

enum class Op { gmm, tgmm };

inline const char* op_name(Op op) { return op == Op::gmm ? "gmm" : "tgmm"; }

}  // namespace vkgmm
