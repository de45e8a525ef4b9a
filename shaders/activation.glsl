// The gated activations (include/vkgmm/ops.hpp, Activation) of a gate value and an up value, and their
// derivatives: gmm's epilogue applies them (shaders/gmm.comp), the routed backward differentiates them
// (shaders/routed_grad.comp). The includer declares ACTIVATION (VKGMM_ACT_*), folded where it is constant.

float silu(float x) { return x / (1.0 + exp(-x)); }
float sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }
// gelu's tanh form, tanh written through exp (tanh(y) = 1 - 2 / (exp(2y) + 1): exact at both ends, where
// some drivers' tanh of a large argument is NaN).
const float GELU_C = 0.7978845608028654;  // sqrt(2 / pi)
float tanh_by_exp(float y) { return 1.0 - 2.0 / (exp(2.0 * y) + 1.0); }
float gelu_tanh(float x) {
  float y = GELU_C * (x + 0.044715 * x * x * x);
  return 0.5 * x * (2.0 - 2.0 / (exp(2.0 * y) + 1.0));
}

float gated_value(float gate, float up) {
  if (ACTIVATION == VKGMM_ACT_SWIGLU) return silu(gate) * up;
  if (ACTIVATION == VKGMM_ACT_SWIGLU_OAI) {
    float g = min(gate, 7.0), u = clamp(up, -7.0, 7.0);
    return (u + 1.0) * g * sigmoid(1.702 * g);
  }
  return gelu_tanh(gate) * up;  // VKGMM_ACT_GEGLU
}

// d(gated_value)/d(gate) and d(gated_value)/d(up) at (gate, up), as (x, y). The clamps of swiglu_oai pass
// no gradient where they hold the value (gate >= 7, |up| >= 7), as jnp.minimum and jnp.clip do past
// their bounds.
vec2 gated_derivatives(float gate, float up) {
  if (ACTIVATION == VKGMM_ACT_SWIGLU) {
    float s = sigmoid(gate);
    return vec2(up * (s + gate * s * (1.0 - s)), gate * s);
  }
  if (ACTIVATION == VKGMM_ACT_SWIGLU_OAI) {
    float g = min(gate, 7.0), u = clamp(up, -7.0, 7.0);
    float s = sigmoid(1.702 * g);
    float dg = gate < 7.0 ? (u + 1.0) * (s + 1.702 * g * s * (1.0 - s)) : 0.0;
    float du = abs(up) < 7.0 ? g * s : 0.0;
    return vec2(dg, du);
  }
  // VKGMM_ACT_GEGLU
  float t = tanh_by_exp(GELU_C * (gate + 0.044715 * gate * gate * gate));
  float dgelu = 0.5 * (1.0 + t) + 0.5 * gate * (1.0 - t * t) * GELU_C * (1.0 + 3.0 * 0.044715 * gate * gate);
  return vec2(up * dgelu, gelu_tanh(gate));
}
