"""The expert part of an MoE layer in one plan: router matmul, top-k, the up projection ([gate | up], bias,
activation) and the down projection combined in token order, and its backward (vkgmm::MoeLayerPlan)."""

from __future__ import annotations

import numpy as np

from . import _context
from ._ops import on_device, rank, scalar_count, spec
from ._vkgmm import Array, ContractError, _MoeLayerPlan
from ._weights import to_float32


class _Layer:
    """The layer's shapes and types from its operands, and its plan."""

    def __init__(self, x, router_w, w_up, w_down, top_k, b_up, b_down, activation, renormalize, expert_offset,
                 num_experts, context, accumulate=False, transpose_weights=False, forward_only=False):
        self.context = c = _context.resolve(context)
        x_shape, self.dtype = spec(x, "x")
        rank(x_shape, 2, "x", "[T, d]")
        r_shape, _ = spec(router_w, "router_w")
        rank(r_shape, 2, "router_w", "[d, E]")
        up_shape, self.weight_type = spec(w_up, "w_up")
        down_shape, self.down_type = spec(w_down, "w_down")
        rank(up_shape, 3, "w_up", "[E_local, d, n_up]")
        rank(down_shape, 3, "w_down", "[E_local, f, d]")
        T, d = x_shape
        E = scalar_count(num_experts, "num_experts", r_shape[1])
        if top_k is None:  # required, so None is a mistake, not a default
            raise TypeError("top_k: expected an integer (the experts each token is routed to), got None")
        top_k = scalar_count(top_k, "top_k", 0)
        if tuple(r_shape) != (d, E):
            raise ContractError(f"router_w: expected shape {(d, E)} ([d, E]), got {tuple(r_shape)}")
        up_blocks, down_blocks = (t not in ("f32", "f16", "bf16") for t in (self.weight_type, self.down_type))
        # Block-format weights keep GGUF's layout: w_up [E_local, n_up, d], w_down [E_local, d, f]; each
        # projection's own type says which. transpose_weights puts float weights in that layout too.
        up_nk, down_nk = up_blocks or bool(transpose_weights), down_blocks or bool(transpose_weights)
        e_local, n_up = up_shape[0], (up_shape[1] if up_nk else up_shape[2])
        gated = activation not in (None, "none")
        f = n_up // 2 if gated else n_up
        want_up = (e_local, n_up, d) if up_nk else (e_local, d, n_up)
        want_down = (e_local, d, f) if down_nk else (e_local, f, d)
        def gguf_hint(shape, nk):
            # A float tensor in GGUF's layout ([E, n, k], as read_gguf gives it) has its last two dims swapped.
            return "" if nk or len(shape) != 3 or shape[2] != d else (
                " (a float tensor in GGUF's or PyTorch's layout [E, n, k]? pass transpose_weights=True)")
        if tuple(up_shape) != want_up:
            raise ContractError(f"w_up: expected shape {want_up} for x {tuple(x_shape)}, got {tuple(up_shape)}"
                                + gguf_hint(up_shape, up_nk))
        if gated and n_up % 2:
            raise ContractError(f"w_up: {n_up} columns [gate | up] (shape {tuple(up_shape)}): the gated activation "
                                f"{activation!r} takes an even number")
        if tuple(down_shape) != want_down:
            raise ContractError(f"w_down: expected shape {want_down}, got {tuple(down_shape)}")
        offset = scalar_count(expert_offset, "expert_offset", 0)
        if offset + e_local > E:
            raise ContractError(f"w_up: {e_local} experts (w_up.shape[0]) from expert_offset = {offset} pass "
                                f"num_experts = {E}")
        self.shapes = {"x": (T, d), "router_w": (d, E), "w_up": tuple(up_shape), "w_down": tuple(down_shape),
                       "b_up": (e_local, n_up), "b_down": (e_local, d)}
        self.frozen = {"w_up": up_blocks, "w_down": down_blocks}
        self.b_up, self.b_down = b_up is not None, b_down is not None
        self.plan = _MoeLayerPlan(c, T, d, f, E, top_k, offset, e_local,
                                  bool(renormalize), activation, self.b_up, self.b_down, self.dtype,
                                  self.weight_type, self.down_type, accumulate, bool(transpose_weights),
                                  forward_only)

    def inputs(self, x, router_w, w_up, w_down, b_up, b_down):
        c = self.context
        s = self.shapes
        return (on_device(x, "x", c, self.dtype, s["x"]), on_device(router_w, "router_w", c, "f32", s["router_w"]),
                on_device(w_up, "w_up", c, self.weight_type, s["w_up"]),
                on_device(w_down, "w_down", c, self.down_type, s["w_down"]),
                None if b_up is None else on_device(b_up, "b_up", c, "f32", s["b_up"]),
                None if b_down is None else on_device(b_down, "b_down", c, "f32", s["b_down"]))

    def empty(self, name, dtype):
        return Array.empty(list(self.shapes[name]), dtype, context=self.context)


def moe_layer(x, router_w, w_up, w_down, *, top_k, b_up=None, b_down=None, activation="swiglu",
              renormalize=True, expert_offset=0, num_experts=None, transpose_weights=False, context=None):
    """y [T, d] = sum over each token's top_k experts (those in [expert_offset, expert_offset + E_local)) of
    weight * (act(x @ w_up[e] + b_up[e]) @ w_down[e] + b_down[e]), routed by logits = x @ router_w (float32):
    weights the softmax over all E of the chosen logits, renormalised over them with renormalize (ties to
    the lower expert). x [T, d]; router_w [d, E]; w_up [E_local, d, 2f] ([gate | up] columns; [E_local,
    d, f] with activation None); w_down [E_local, f, d]; b_up [E_local, 2f]; b_down [E_local, d]. Weights in
    a block format (each projection its own type) are frozen and in GGUF's layout: w_up [E_local, 2f, d],
    w_down [E_local, d, f]; transpose_weights=True takes float weights in that layout too (GGUF's float
    tensors, PyTorch's [out, in] Linear weights)."""
    layer = _Layer(x, router_w, w_up, w_down, top_k, b_up, b_down, activation, renormalize, expert_offset,
                   num_experts, context, transpose_weights=transpose_weights, forward_only=True)
    y = layer.empty("x", layer.dtype)
    layer.plan.run(*layer.inputs(x, router_w, w_up, w_down, b_up, b_down), y)
    return y.numpy()


def moe_layer_vjp(x, router_w, w_up, w_down, d_y=None, *, top_k, b_up=None, b_down=None, activation="swiglu",
                  renormalize=True, expert_offset=0, num_experts=None, target=None, transpose_weights=False,
                  context=None):
    """moe_layer's y and its gradients for the cotangent d_y [T, d], forward and backward in one submit:
    (y, grads), grads a dict of "x", "router_w", "w_up", "w_down" (each absent where its weights are in a
    block format, frozen; with transpose_weights in the weights' layout) and "b_up", "b_down" when given. Gradients flow through the routing weights to the router
    (the top-k choice itself has none). A shard of the experts (expert_offset, w_up's E_local) gives its
    experts' weight gradients and its share of y, "x" and "router_w": the shards' shares add up.

    With target [T, d] instead of d_y, d_y is y - target, the gradient of 1/2 |y - target|^2, computed on
    the device in the same submit (y starts as -target and the forward adds the layer to it)."""
    if (d_y is None) == (target is None):
        raise ContractError("d_y, target: give one of them (the cotangent, or the target of a squared error)")
    layer = _Layer(x, router_w, w_up, w_down, top_k, b_up, b_down, activation, renormalize, expert_offset,
                   num_experts, context, accumulate=target is not None, transpose_weights=transpose_weights)
    c = layer.context
    given = d_y if d_y is not None else target
    name = "d_y" if d_y is not None else "target"
    g_shape, g_type = spec(given, name)
    if tuple(g_shape) != layer.shapes["x"]:
        raise ContractError(f"{name}: expected shape {layer.shapes['x']} (y's), got {tuple(g_shape)}")
    if target is None:
        y = layer.empty("x", layer.dtype)
        cotangent = on_device(d_y, "d_y", c, layer.dtype)
        grads = {"x": layer.empty("x", layer.dtype), "router_w": layer.empty("router_w", "f32")}
    else:
        # The accumulating plan adds to y, d_x and d_router_w: they start as -target and zeros.
        if layer.dtype != "f32":
            raise ContractError("target: a squared error's target takes float32 x and y")
        if g_type not in ("f32", "f16", "bf16"):
            raise ContractError(f"target: expected float values, got a {g_type} Array")
        target = to_float32(target)  # an Array read back: y starts as its negation
        y = cotangent = Array(-target, "f32", context=c)
        grads = {"x": Array(np.zeros(layer.shapes["x"], np.float32), "f32", context=c),
                 "router_w": Array(np.zeros(layer.shapes["router_w"], np.float32), "f32", context=c)}
    if not layer.frozen["w_up"]:
        grads["w_up"] = layer.empty("w_up", layer.weight_type)
    if not layer.frozen["w_down"]:
        grads["w_down"] = layer.empty("w_down", layer.down_type)
    if layer.b_up:
        grads["b_up"] = layer.empty("b_up", "f32")
    if layer.b_down:
        grads["b_down"] = layer.empty("b_down", "f32")
    layer.plan.run(*layer.inputs(x, router_w, w_up, w_down, b_up, b_down), y, cotangent, grads["x"],
                   grads["router_w"], grads.get("w_up"), grads.get("b_up"), grads.get("w_down"), grads.get("b_down"))
    out = y.numpy()
    if target is not None:
        out = out + target  # y itself, from the residual
    return out, {name: a.numpy() for name, a in grads.items()}
