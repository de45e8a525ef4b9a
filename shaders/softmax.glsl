// The softmax over a token's logits as top-k routing defines it, for topk.comp and its gradient
// (topk_grad.comp): both must see the same ranking of NaN and the same terms, so that the gradient is the
// forward's own. Included after the includer declares its logits binding as `logits[]`.
#ifndef VKGMM_SOFTMAX_GLSL
#define VKGMM_SOFTMAX_GLSL

const float NEG_INF = -1.0 / 0.0;  // -inf (a constant expression glslc folds)

// Logit e of the token whose logits start at `base`, as ranked: NaN (a broken router) ranks below every
// number, as -inf, so its softmax term is 0.
float logit(uint base, uint e) {
  float v = logits[base + e];
  return isnan(v) ? NEG_INF : v;
}

// exp(v - top) with the top logit's own term exactly 1: no NaN when the top is +-inf (all -inf: equal).
float term(float v, float top) { return v == top ? 1.0 : exp(v - top); }

// The softmax's max and denominator over `experts` logits from `base`: softmax_e = term(logit, top) / total.
void softmax_max_sum(uint base, uint experts, out float top, out float total) {
  top = NEG_INF;
  for (uint e = 0u; e < experts; ++e) top = max(top, logit(base, e));
  total = 0.0;
  for (uint e = 0u; e < experts; ++e) total += term(logit(base, e), top);
}

#endif
