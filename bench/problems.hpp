// The vkgmm problem a workload is, without its tiling: what the bench plans, and what `vkgmm gpu-report`
// compiles for the same workloads.
#pragma once

#include <cstdint>

#include "vkgmm/ops.hpp"
#include "workloads.hpp"

namespace bench {

// The forward gmm of a gmm or backward workload (group sizes on the host).
vkgmm::GmmProblem gmm_problem(const Workload& w);
// A tgmm workload's problem (lhs [k, m]).
vkgmm::TgmmProblem tgmm_problem(const Workload& w);
// A workload routed by ids, all its experts in one window: combined in token order with the routing
// weights (out [T, n]) or per slot (out [T, top_k, n]); fp32 out either way.
vkgmm::GmmProblem routed_problem(const Workload& w, bool combine);
// The experts of one window of a routed workload: as many as one call reads whole
// (`whole_input_bytes`: Context::max_whole_input_bytes of the weights' type).
int64_t experts_per_window(const Workload& w, uint64_t whole_input_bytes);

}  // namespace bench
