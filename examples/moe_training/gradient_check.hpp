// The training step checked against an independent CPU computation in double: the layer's forward and
// loss computed token by token, and central finite differences of that loss, which the update the
// example applied must match (a dropped, sign-flipped or wrong gradient of any parameter fails; the
// falling loss alone would not show it).
#pragma once

#include <cstdint>
#include <vector>

namespace train {

using Floats = std::vector<float>;

// The layer's parameters, as MoeLayerPlan takes them (f32, SwiGLU, both biases): router_w [d, E],
// w_up [E, d, 2f] ([gate | up] columns), w_down [E, f, d], b_up [E, 2f], b_down [E, d].
struct Weights {
  Floats router_w, w_up, w_down, b_up, b_down;
};

struct Shape {
  int64_t tokens = 0, d_model = 0, d_ff = 0, experts = 0, top_k = 0;
};

// Each token's top_k experts by the router's logits computed in double, best first, ties to the lower
// index (the device's rule); `margin` receives the smallest gap between a token's last chosen logit and
// its best unchosen one, so that a caller can tell whether the device (in f32) could have chosen otherwise.
std::vector<int64_t> top_k_ids(const Shape& s, const Weights& w, const Floats& x, double& margin);

// 1/(2T) sum over tokens of |layer(x[t]) - target[t]|^2, the layer computed in double with each token's
// experts fixed to `ids` and its gate weights a softmax over those experts' logits. With the experts
// fixed the loss is smooth in every parameter, router_w included (through the gate weights), so finite
// differences of it are the gradient the device computes for the routing it chose.
double mean_loss(const Shape& s, const Weights& w, const Floats& x, const Floats& target,
                 const std::vector<int64_t>& ids);

// Checks one SGD step `after = before - lr * gradient of the mean loss`: the first step's loss (what the
// device reported) against mean_loss, and for `coordinates` random entries of every parameter,
// (before - after) / lr against central finite differences of mean_loss. Prints a line per parameter.
bool check_step(const Shape& s, const Weights& before, const Weights& after, double lr, const Floats& x,
                const Floats& target, double device_loss, int coordinates);

}  // namespace train
