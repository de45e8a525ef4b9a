// CPU reference implementations: the oracle of the tests, the CLI's --check and the bench's check.
// Inputs are the values the device sees (already rounded to their element types), as float; sums over k
// are accumulated in double and rounded to float; gmm's epilogue (bias, activation, routing weight, sum
// over slots, + existing_out) follows in fp32, as on the device; the result is rounded to the out type.
// The double sums are more than the contract's fp32 ones where fp32 would overflow: a sum whose partial
// sums pass FLT_MAX (3e38 + 3e38 - 3e38), or products that overflow to infinities of both signs, comes
// out finite here and inf or NaN on the device. Such inputs are no check of a kernel.
// Not part of the library (reference/, not installed): for the tests, the CLI and the bench.
//
// Quantized weights (p.rhs_type a block format, q8_0 ... mxfp4): rhs is given as the float values its
// blocks hold, already exact (quant::dequantize_experts turns a GGUF expert tensor [G_local, n, k] into
// them), in the layout p.transpose_rhs names, so [G_local, n, k] with transpose_rhs = true for the forward
// (as GGUF stores expert weights). p.rhs_type is then never rounded to nor sized by; gmm_backward's d_rhs
// (which the device never computes for frozen quantized weights) comes out in f32.
#pragma once

#include <vector>

#include "vkgmm/ops.hpp"
#include "vkgmm/top_k.hpp"

namespace vkgmm::reference {

// gmm's output columns: n, or n / 2 with swiglu.
int64_t out_columns(const GmmProblem& p);

// lhs [m,k], rhs [G_local,k,n] (or [G_local,n,k]), existing_out [m,n_out] or empty, bias [G_local,n] with
// p.epilogue.bias. Applies p.epilogue. Returns [m,n_out] (n_out = n, or n / 2 with swiglu).
std::vector<float> gmm(const GmmProblem& p, const std::vector<float>& lhs, const std::vector<float>& rhs,
                       const std::vector<float>& existing_out = {}, const std::vector<float>& bias = {});

// gmm routed by expert ids (p.routing.top_k > 0; T = p.m): lhs [T,k] or [T,top_k,k], ids [T,top_k] (ids
// outside the window, -1 and out-of-range ones are skipped), weights [T,top_k] with p.routing.combine,
// bias as above, existing_out of the output's shape or empty. Returns [T,top_k,n_out] or, combined,
// [T,n_out].
std::vector<float> gmm_routed(const GmmProblem& p, const std::vector<float>& lhs, const std::vector<float>& rhs,
                              const std::vector<int32_t>& ids, const std::vector<float>& weights = {},
                              const std::vector<float>& existing_out = {}, const std::vector<float>& bias = {});

// lhs [k,m] (or [m,k] with lhs_mk), rhs [m,n], existing_out or empty. Returns [groups,k,n] ([groups,n,k]
// with out_nk).
std::vector<float> tgmm(const TgmmProblem& p, const std::vector<float>& lhs, const std::vector<float>& rhs,
                        const std::vector<float>& existing_out = {});

// Top-k routing of logits [tokens, experts] (TopKProblem's rules; softmax in double, then rounded).
struct TopK {
  std::vector<int32_t> ids;   // [tokens, top_k]
  std::vector<float> weights;  // [tokens, top_k]
};
TopK top_k(const TopKProblem& p, const std::vector<float>& logits);
// Its gradient to the logits (TopKBackwardPlan's definition, top_k.hpp) in float64: d_logits [tokens,
// experts] for the forward's ids and weights and d_weights [tokens, top_k]. Ids outside [0, experts) are
// skipped; without renormalize the softmax is recomputed from the logits as top_k computes it.
std::vector<double> top_k_backward(const TopKProblem& p, const std::vector<float>& logits,
                                   const std::vector<int32_t>& ids, const std::vector<float>& weights,
                                   const std::vector<float>& d_weights);

struct Gradients {
  std::vector<float> d_lhs, d_rhs;
};
Gradients gmm_backward(const GmmProblem& forward, const std::vector<float>& lhs,
                       const std::vector<float>& rhs, const std::vector<float>& d_out);

// The routed forward's inputs as gmm_routed takes them (routed_backward.cpp), and its gradients in
// float64 for a cotangent d_out (its output's shape): d_lhs as lhs, d_rhs as rhs, d_bias [E_local, n]
// with a bias, d_weights [T, top_k] with a combine (0 for slots outside the window).
struct RoutedInputs {
  std::vector<float> lhs, rhs, weights, bias;
  std::vector<int32_t> ids;
};
struct RoutedGradients {
  std::vector<double> d_lhs, d_rhs, d_bias, d_weights;
};
RoutedGradients gmm_routed_backward(const GmmProblem& forward, const RoutedInputs& in, const std::vector<float>& d_out);
// sum(d_out * forward(in)) in float64 (no rounding to the out type, no existing_out): the scalar whose
// gradients gmm_routed_backward gives, for finite differences.
double gmm_routed_dot(const GmmProblem& forward, const RoutedInputs& in, const std::vector<double>& lhs,
                      const std::vector<double>& rhs, const std::vector<double>& weights,
                      const std::vector<double>& bias, const std::vector<float>& d_out);

}  // namespace vkgmm::reference
