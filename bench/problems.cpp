#include "problems.hpp"

#include <algorithm>

namespace bench {

vkgmm::GmmProblem gmm_problem(const Workload& w) {
  vkgmm::GmmProblem p;
  p.m = w.m, p.k = w.k, p.n = w.n;
  p.group_sizes = w.group_sizes;
  p.lhs_type = p.out_type = w.dtype;
  p.rhs_type = w.rhs_type();
  p.transpose_rhs = w.transpose_rhs();
  return p;
}

vkgmm::TgmmProblem tgmm_problem(const Workload& w) {
  vkgmm::TgmmProblem p;
  p.m = w.m, p.k = w.k, p.n = w.n;
  p.group_sizes = w.group_sizes;
  p.lhs_type = p.rhs_type = p.out_type = w.dtype;
  return p;
}

vkgmm::GmmProblem routed_problem(const Workload& w, bool combine) {
  vkgmm::GmmProblem p;
  p.m = w.m, p.k = w.k, p.n = w.n;
  p.num_rhs_groups = w.groups;
  p.routing.top_k = w.top_k;
  p.routing.combine = combine;
  p.routing.lhs_per_slot = w.lhs_per_slot;
  p.epilogue.bias = w.bias;
  p.epilogue.activation = w.activation;
  p.routing.num_experts = w.groups;
  p.lhs_type = w.dtype;
  p.rhs_type = w.rhs_type();
  p.transpose_rhs = w.transpose_rhs();  // block formats: [E, n, k]
  // Combined: fp32 out, the expert windows accumulate through it. Per slot, each slot is written by its
  // expert's window alone (the others copy it through existing_out): slots_type loses nothing.
  p.out_type = combine ? vkgmm::DType::f32 : w.slots_type;
  return p;
}

int64_t experts_per_window(const Workload& w, uint64_t whole_input_bytes) {
  // Beyond what one call reads whole, vkgmm binds the tensor in parts and reads those a word at a time
  // with a branch per load: on lavapipe without texel views, qwen3-ids-t1 f32 ran 143 ms as one such
  // call against 6.6 ms as 7 windows of 21 experts (128 MiB bindings).
  const uint64_t expert_bytes = vkgmm::storage_bytes(w.rhs_type(), uint64_t(w.k) * uint64_t(w.n));
  return std::max<int64_t>(1, int64_t(whole_input_bytes / expert_bytes));
}

}  // namespace bench
