// The gated activations (Activation) in the reference's arithmetic: float for the forward (the device's
// fp32 epilogue), double for the backward's oracle. Internal to reference/.
#pragma once

#include <algorithm>
#include <cmath>

#include "vkgmm/ops.hpp"

namespace vkgmm::reference::act {

template <class F>
F sigmoid(F x) { return F(1) / (F(1) + std::exp(-x)); }
template <class F>
F silu(F x) { return x / (F(1) + std::exp(-x)); }
template <class F>
F gelu_tanh(F x) {
  const F c = F(0.7978845608028654);  // sqrt(2 / pi)
  return F(0.5) * x * (F(1) + std::tanh(c * (x + F(0.044715) * x * x * x)));
}

// A gated activation of one output column from its gate and up values (none: the gate value).
template <class F>
F gated_value(Activation a, F gate, F up) {
  switch (a) {
    case Activation::swiglu: return silu(gate) * up;
    case Activation::swiglu_oai: {
      const F g = std::min(gate, F(7)), u = std::clamp(up, F(-7), F(7));
      return (u + F(1)) * g * sigmoid(F(1.702) * g);
    }
    case Activation::geglu: return gelu_tanh(gate) * up;
    case Activation::none: break;
  }
  return gate;
}

}  // namespace vkgmm::reference::act
