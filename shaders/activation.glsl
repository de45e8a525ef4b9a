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

// swiglu_oai's clamps. GLSL leaves min and clamp of a NaN undefined (drivers return the other operand,
// a finite bound): a NaN passes through, as std::min, jnp.minimum and torch.clamp let it.
float oai_gate(float gate) { return isnan(gate) ? gate : min(gate, 7.0); }
float oai_up(float up) { return isnan(up) ? up : clamp(up, -7.0, 7.0); }

float gated_value(float gate, float up) {
  if (ACTIVATION == VKGMM_ACT_SWIGLU) return silu(gate) * up;
  if (ACTIVATION == VKGMM_ACT_SWIGLU_OAI) {
    float g = oai_gate(gate), u = oai_up(up);
    return (u + 1.0) * g * sigmoid(1.702 * g);
  }
  return gelu_tanh(gate) * up;  // VKGMM_ACT_GEGLU
}

// d(gated_value)/d(gate) and d(gated_value)/d(up) at (gate, up), as (x, y). The clamps of swiglu_oai pass
// no gradient where they hold the value (gate >= 7, |up| >= 7), as jnp.minimum and jnp.clip do past
// their bounds; a NaN input's own derivative is NaN.
vec2 gated_derivatives(float gate, float up) {
  if (ACTIVATION == VKGMM_ACT_SWIGLU) {
    float s = sigmoid(gate);
    return vec2(up * (s + gate * s * (1.0 - s)), gate * s);
  }
  if (ACTIVATION == VKGMM_ACT_SWIGLU_OAI) {
    float g = oai_gate(gate), u = oai_up(up);
    float s = sigmoid(1.702 * g);
    float dg = gate < 7.0 ? (u + 1.0) * (s + 1.702 * g * s * (1.0 - s)) : isnan(gate) ? gate : 0.0;
    float du = abs(up) < 7.0 ? g * s : isnan(up) ? up : 0.0;
    return vec2(dg, du);
  }
  // VKGMM_ACT_GEGLU. Where tanh is saturated (1 - t^2 == 0, |gate| past about 10) its term is 0, though
  // gate^2 may overflow (|gate| past 1.8e19) and make it 0 * inf.
  float t = tanh_by_exp(GELU_C * (gate + 0.044715 * gate * gate * gate));
  float sech2 = 1.0 - t * t;
  float dgelu = 0.5 * (1.0 + t) +
                (sech2 == 0.0 ? 0.0 : 0.5 * gate * sech2 * GELU_C * (1.0 + 3.0 * 0.044715 * gate * gate));
  return vec2(up * dgelu, gelu_tanh(gate));
}
