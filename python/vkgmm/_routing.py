"""gmm routed by expert ids: the router's ids [T, top_k] as they come, tokens gathered by expert on the
device, results per slot or combined in token order with the routing weights, in one call."""

from __future__ import annotations

import numpy as np

from . import _context, _dtypes
from ._ops import gmm_operands, host_ints, on_device, out_array, output, rank, scalar_count, spec
from ._vkgmm import Array, ContractError, _GmmBackwardPlan, _GmmPlan, _top_k, _top_k_backward


def ids_array(ids, shape=None) -> np.ndarray:
    """ids as int32 [T, top_k]: an expert index, or -1 for none (ids >= num_experts are the caller's to check)."""
    a = host_ints(ids, "ids", 2, "[T, top_k]")
    if a.shape[1] == 0:
        raise ContractError(f"ids: shape {a.shape} routes no slot: top_k (its second dimension) must be >= 1")
    if shape is not None and a.shape != tuple(shape):
        raise ContractError(f"ids: expected shape {tuple(shape)} (the plan's [T, top_k]), got {a.shape}")
    if a.size and a.min() < -1:
        raise ContractError(f"ids: {int(a.min())} is below -1 (an expert index, or -1 for none)")
    return a


class IdsGmmPlan:
    """gmm routed by expert ids, planned once: ``plan(lhs, rhs, ids, weights=None, existing_out=None)``.

    lhs [T, k] (a token's row for all its slots) or [T, top_k, k] (one row per slot); ids [T, top_k]
    (an expert index, or -1: none); rhs [E_local, k, n] ([E_local, n, k] with transpose_rhs, or a
    block-format Array) holding experts [group_offset, group_offset + E_local). Without weights, out is
    per slot [T, top_k, n_out]; with `combine` (weights [T, top_k] float32 given at call time), out is
    [T, n_out] = sum over local slots of weight * epi(row @ W) + existing_out. n_out is n, or n / 2 with
    activation "swiglu", "swiglu_oai" or "geglu"; bias [E_local, n] float32 is added before the activation. Slots of other experts
    keep existing_out (per slot) or add nothing (combined): shards of the experts accumulate through it.
    """

    def __init__(self, lhs, rhs, ids, combine=False, preferred_element_type=np.float32, tiling=None,
                 group_offset=0, num_experts=None, existing_out=False, transpose_rhs=False, *, bias=False,
                 activation=None, context=None):
        self.context = _context.resolve(context)
        self.ids_shape = ids_array(ids).shape
        T, top_k = self.ids_shape
        lhs_shape, self.lhs_type, rhs_shape, self.rhs_type, g_local, k, n, transposed = gmm_operands(
            lhs, rhs, transpose_rhs, 0)
        per_slot = len(lhs_shape) == 3
        if not per_slot:
            rank(lhs_shape, 2, "lhs", "[T, k] (or [T, top_k, k])")
        if lhs_shape[0] != T or (per_slot and lhs_shape[1] != top_k):
            raise ContractError(f"lhs: shape {lhs_shape} does not match ids {self.ids_shape}: expected "
                                "[T, k] or [T, top_k, k]")
        self.preferred_element_type = preferred_element_type
        self.out_type = _dtypes.dtype_name(preferred_element_type, "preferred_element_type")
        self.num_experts = experts_count(num_experts)
        self.lhs_shape, self.rhs_shape, self.bias_shape = lhs_shape, rhs_shape, (g_local, n)
        offset = scalar_count(group_offset, "group_offset", 0)
        self._plan = _GmmPlan(self.context, T, k, n, [], g_local, offset, transposed, self.lhs_type, self.rhs_type, self.out_type, bool(existing_out), tiling, top_k, per_slot,
                              bool(combine), self.num_experts, bool(bias), activation)
        self.out_shape = (T, self._plan.n_out) if combine else (T, top_k, self._plan.n_out)

    @property
    def tiling(self) -> tuple[int, int, int]:
        return self._plan.tiling

    @property
    def schedule(self) -> str:
        return self._plan.schedule

    def __call__(self, lhs, rhs, ids, weights=None, existing_out=None, *, bias=None, out=None):
        c = self.context
        ids32 = checked_ids(ids, self.ids_shape, self.num_experts)
        o = out_array(self.out_shape, self.out_type, c, out)
        status = self._plan.run(
            on_device(lhs, "lhs", c, self.lhs_type, self.lhs_shape), on_device(rhs, "rhs", c, self.rhs_type, self.rhs_shape),
            o, None if existing_out is None else on_device(existing_out, "existing_out", c, self.out_type, self.out_shape),
            None if bias is None else on_device(bias, "bias", c, "f32", self.bias_shape), ids32,
            None if weights is None else on_device(weights, "weights", c, "f32", self.ids_shape))
        if status:  # the host checked the ids: a bit here is vkgmm's bug, not the caller's
            raise RuntimeError(f"ids: the device status word is {status} for valid ids")
        return output(o, self.preferred_element_type, out)


def experts_count(num_experts) -> int:
    """num_experts as the library takes it: None is 0, unknown (ids past the local experts are skipped)."""
    e = scalar_count(num_experts, "num_experts", 0)
    if num_experts is not None and e < 1:
        raise ContractError(f"num_experts: {e} experts; give the router's E (>= 1), or None where it is unknown")
    return e


def checked_ids(ids, shape, num_experts: int) -> np.ndarray:
    """ids as gmm_ids takes them, refusing ids >= num_experts where it is known."""
    ids32 = ids_array(ids, shape)
    if num_experts and ids32.size and ids32.max() >= num_experts:
        raise ContractError(f"ids: {int(ids32.max())} is not below num_experts = {num_experts}")
    return ids32


def gmm_ids(lhs, rhs, ids, weights=None, preferred_element_type=np.float32, tiling=None, group_offset=0,
            num_experts=None, existing_out=None, transpose_rhs=False, *, bias=None, activation=None,
            context=None, out=None):
    """gmm routed by expert ids (see IdsGmmPlan): per-slot out [T, top_k, n_out] without weights, combined
    in token order [T, n_out] with weights [T, top_k]. num_experts E, when given, refuses ids >= E."""
    plan = IdsGmmPlan(lhs, rhs, ids, weights is not None, preferred_element_type, tiling, group_offset,
                      num_experts, existing_out is not None, transpose_rhs, bias=bias is not None,
                      activation=activation, context=context)
    return plan(lhs, rhs, ids, weights, existing_out, bias=bias, out=out)


def top_k(logits, k: int, renormalize: bool = True, *, context=None):
    """Top-k routing of router logits [T, E] (float32) on the device: (ids int32 [T, k], weights float32
    [T, k]), the inputs gmm_ids takes. Per token, the k experts with the highest logits, highest first
    (equal logits: the lower expert; NaN ranks as -inf), weighted by the softmax over all E experts of
    their logits, renormalised to sum to 1 over the k (Mixtral, Qwen3) or, with renormalize=False, not
    (DeepSeek-V2)."""
    c = _context.resolve(context)
    if k is None:
        raise ContractError("k: expected an integer, got None")
    return _top_k(on_device(logits, "logits", c, "f32"), scalar_count(k, "k", 0), bool(renormalize))


def gmm_ids_vjp(lhs, rhs, ids, d_out, weights=None, *, bias=None, activation=None, group_offset=0,
                num_experts=None, transpose_rhs=False, tiling=None, context=None):
    """The forward of gmm_ids and its gradients for the cotangent d_out (out's shape; its dtype is the
    forward's out type): (out, grads), grads a dict of "lhs", "rhs" (absent for block-format weights, which
    are frozen), "bias" (with bias) and "weights" (with weights: <d_out[t], the slot's activation output>,
    0 for slots outside [group_offset, group_offset + E_local)). Every sum runs in a fixed order: the same
    bits on every run. Shards of the experts give d_lhs and d_weights shares that add up to the layer's."""
    c = _context.resolve(context)
    _, d_type = spec(d_out, "d_out")
    forward = IdsGmmPlan(lhs, rhs, ids, weights is not None, d_type, tiling, group_offset, num_experts, False,
                         transpose_rhs, bias=bias is not None, activation=activation, context=c)
    d_out = on_device(d_out, "d_out", c, _dtypes.dtype_name(d_type, "d_out"), forward.out_shape)  # before any run
    out = forward(lhs, rhs, ids, weights, bias=bias)
    T, top_k = forward.ids_shape
    lhs_shape, lhs_type, rhs_shape, rhs_type, g_local, k, n, transposed = gmm_operands(lhs, rhs, transpose_rhs, 0)
    experts = experts_count(num_experts)
    plan = _GmmBackwardPlan(c, T, k, n, [], g_local, scalar_count(group_offset, "group_offset", 0), transposed,
                            lhs_type, rhs_type, _dtypes.dtype_name(d_type), tiling, top_k=top_k,
                            lhs_per_slot=len(lhs_shape) == 3, combine=weights is not None, num_experts=experts,
                            bias=bias is not None, activation=activation)
    d_lhs = Array.empty(list(lhs_shape), lhs_type, context=c)
    d_rhs = Array.empty(list(rhs_shape), rhs_type, context=c) if plan.has_d_rhs else None
    d_bias = Array.empty([g_local, n], "f32", context=c) if bias is not None else None
    d_weights = Array.empty([T, top_k], "f32", context=c) if weights is not None else None
    status = plan.run(on_device(lhs, "lhs", c, lhs_type, lhs_shape), on_device(rhs, "rhs", c, rhs_type, rhs_shape),
                      d_out, d_lhs, d_rhs,
                      checked_ids(ids, (T, top_k), experts),
                      None if weights is None else on_device(weights, "weights", c, "f32", (T, top_k)),
                      None if bias is None else on_device(bias, "bias", c, "f32", (g_local, n)), d_bias, d_weights)
    if status:  # the host checked the ids: a bit here is vkgmm's bug, not the caller's
        raise RuntimeError(f"ids: the device status word is {status} for valid ids")
    grads = {"lhs": d_lhs.numpy()}
    if plan.has_d_rhs:
        grads["rhs"] = d_rhs.numpy()
    elif not plan.frozen_rhs:
        grads["rhs"] = np.zeros(rhs_shape, np.float32)  # no local expert: nothing to differentiate
    if d_bias is not None:
        grads["bias"] = d_bias.numpy()
    if d_weights is not None:
        grads["weights"] = d_weights.numpy()
    return out, grads


def top_k_backward(logits, ids, weights, d_weights, renormalize: bool = True, *, context=None):
    """The gradient of top_k's weights to the logits, on the device: d_logits float32 [T, E] for the logits
    [T, E] and the forward's ids [T, k] and weights [T, k] (float32), given d_weights [T, k] (float32), the
    loss's gradient to the weights. With s = sum over a token's slots of d_weights * weights: renormalized,
    d_logits[e] = weights[j] * (d_weights[j] - s) summed over the slots j choosing e (0 for the others);
    with renormalize=False, softmax(logits)[e] * (g[e] - s), g[e] the d_weights of the slots choosing e.
    Ids outside [0, E) (-1: none) take no part."""
    c = _context.resolve(context)
    ids32 = host_ints(ids, "ids", 2, "[T, top_k]")
    logits_shape, _ = spec(logits, "logits")
    if len(logits_shape) == 2 and ids32.shape[0] != logits_shape[0]:
        raise ContractError(f"ids: shape {ids32.shape} for logits {tuple(logits_shape)}: expected T = {logits_shape[0]} rows")
    return _top_k_backward(on_device(logits, "logits", c, "f32"), ids32,
                           on_device(weights, "weights", c, "f32", ids32.shape),
                           on_device(d_weights, "d_weights", c, "f32", ids32.shape), bool(renormalize))
