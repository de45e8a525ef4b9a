"""gmm, tgmm and the gmm backward with megablox's signatures, on numpy arrays or vkgmm.Arrays.

Each function builds a plan and calls it once; the plan classes are for repeated calls with the same
shapes and group sizes (the library checks the problem and uploads its metadata once per plan).
Everything the contract checks is checked by the library; this layer derives m, k, n from the operands'
shapes and says which argument does not match which.
"""

from __future__ import annotations

import numpy as np

from . import _context, _dtypes
from ._vkgmm import Array, ContractError, _GmmBackwardPlan, _GmmPlan, _TgmmPlan


def spec(x, what: str):
    """(shape, vkgmm dtype name) of an operand: a vkgmm.Array, or host data (numpy or anything array-like)."""
    if isinstance(x, Array):
        return tuple(x.shape), x.dtype
    a = _dtypes.host_input(x, what)
    return a.shape, _dtypes.array_dtype_name(a, None, what)


def checked_operand(x, what: str, context, dtype: str | None = None, shape=None):
    """x checked as on_device takes it: an Array as it is, host data as numpy. With `shape`, x must have it:
    the library sees only a buffer's bytes, which a transposed or reshaped operand of the same size would
    fill."""
    if shape is not None:
        got = tuple(x.shape) if isinstance(x, Array) else np.shape(x)
        if tuple(got) != tuple(shape):
            raise ContractError(f"{what}: expected shape {tuple(shape)}, got {tuple(got)}")
    if isinstance(x, Array):
        if x.context is not context:
            raise ContractError(f"{what}: the Array lives on another Context than the plan's")
        if dtype is not None and x.dtype != dtype:
            raise ContractError(f"{what}: the plan takes {dtype}, got a {x.dtype} Array")
        return x
    a = _dtypes.host_input(x, what)
    _dtypes.array_dtype_name(a, dtype, what)  # refused naming the operand, not the Array made of it
    return a


def on_device(x, what: str, context, dtype: str | None = None, shape=None) -> Array:
    """x as a vkgmm.Array on `context`: an Array as it is (on that context), host data uploaded."""
    x = checked_operand(x, what, context, dtype, shape)
    return x if isinstance(x, Array) else Array(x, dtype, context=context)


def rank(shape, n: int, what: str, layout: str):
    if len(shape) != n:
        raise ContractError(f"{what}: expected rank {n} {layout}, got shape {tuple(shape)}")


def host_ints(x, what: str, ndim: int, layout: str) -> np.ndarray:
    """Host integers of rank `ndim` as int32 (refusing floats, vkgmm.Arrays and values past int32)."""
    if isinstance(x, Array):
        raise ContractError(f"{what}: expected host integers (numpy, list), not a vkgmm.Array")
    a = np.asarray(x)
    if a.ndim != ndim:
        raise ContractError(f"{what}: expected rank {ndim} {layout}, got shape {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise ContractError(f"{what}: expected integers, got {a.dtype.name}")
    if a.size and (a.min() < np.iinfo(np.int32).min or a.max() > np.iinfo(np.int32).max):
        raise ContractError(f"{what}: a value does not fit int32")
    return np.ascontiguousarray(a, dtype=np.int32)


def scalar_count(x, what: str, default):
    """An int argument as megablox takes it: an int, a one-element integer array, or None (`default`)."""
    if x is None:
        return default
    a = np.asarray(x)
    if a.size != 1 or not np.issubdtype(a.dtype, np.integer):
        raise ContractError(f"{what}: expected an integer (or a one-element integer array), got {x!r}")
    return int(a.reshape(-1)[0])


def group_sizes_list(group_sizes) -> list[int]:
    """All G group sizes as int32 values (negative ones are the library's to refuse, naming them)."""
    return [int(v) for v in host_ints(group_sizes, "group_sizes", 1, "[G]")]


def output(out: Array, requested, into: Array | None):
    """What a call returns: the `into` Array it wrote, else the result as numpy."""
    if into is not None:
        return into
    return _dtypes.host_output(out.numpy(), requested)


def out_array(shape, out_type: str, context, into: Array | None, what: str = "out") -> Array:
    if into is None:
        return Array.empty(list(shape), out_type, context=context)
    if not isinstance(into, Array):
        raise ContractError(f"{what}: expected a vkgmm.Array to write into (Array.empty), got {type(into).__name__}")
    if into.context is not context:  # another device's buffer: the plan could not even bind it
        raise ContractError(f"{what}: the Array lives on another Context than the plan's")
    if tuple(into.shape) != tuple(shape) or into.dtype != out_type:
        raise ContractError(f"{what}: expected a {out_type} Array of shape {tuple(shape)}, got {into!r}")
    return into


def rhs_layout(rhs_shape, rhs_type: str, transpose_rhs: bool):
    """(G_local, k, n, transpose_rhs) of gmm's rhs. A block-format rhs is GGUF's [experts, n, k]: the
    transposed layout is implied, whatever transpose_rhs says."""
    transposed = transpose_rhs or rhs_type not in ("f32", "f16", "bf16")
    rank(rhs_shape, 3, "rhs", "[G_local, n, k]" if transposed else "[G_local, k, n]")
    g_local, a, b = rhs_shape
    return (g_local, b, a, True) if transposed else (g_local, a, b, False)


def check_k(lhs_shape, k_rhs: int, transposed: bool):
    if not lhs_shape:
        raise ContractError("lhs: expected an array of rank 2 or more, got a scalar")
    if lhs_shape[-1] != k_rhs:
        layout = "[G_local, n, k]" if transposed else "[G_local, k, n]"
        raise ContractError(f"rhs: k = {k_rhs} (rhs is {layout}) but lhs {tuple(lhs_shape)} has k = {lhs_shape[-1]}")


def gmm_operands(lhs, rhs, transpose_rhs: bool, lhs_rank: int = 2, lhs_layout: str = "[m, k]"):
    """(lhs shape, lhs type, rhs shape, rhs type, G_local, k, n, transposed) of gmm's operands, checked
    against each other (the plan sees only k and the buffers' sizes)."""
    lhs_shape, lhs_type = spec(lhs, "lhs")
    rhs_shape, rhs_type = spec(rhs, "rhs")
    if lhs_rank:
        rank(lhs_shape, lhs_rank, "lhs", lhs_layout)
    g_local, k, n, transposed = rhs_layout(rhs_shape, rhs_type, transpose_rhs)
    check_k(lhs_shape, k, transposed)
    return tuple(lhs_shape), lhs_type, tuple(rhs_shape), rhs_type, g_local, k, n, transposed


class GmmPlan:
    """gmm planned once for operands of these shapes and types, and these group sizes:
    ``plan(lhs, rhs, existing_out=None) -> out``.

    lhs [m, k]; rhs [G_local, k, n] ([G_local, n, k] with transpose_rhs, or a block-format Array from
    vkgmm.quantize / vkgmm.read_gguf); group_sizes [G] int; out [m, n] (n / 2 with a gated activation).
    Rows of group g in [group_offset, group_offset + G_local) are lhs[rows] @ rhs[g - group_offset]; every
    other row is existing_out's (or 0). bias [G_local, n] float32 is added before the activation.
    lhs and rhs may be numpy arrays (only their shapes and types are used here) or vkgmm.Arrays.
    """

    def __init__(self, lhs, rhs, group_sizes, preferred_element_type=np.float32, tiling=None, group_offset=0,
                 existing_out=False, transpose_rhs=False, *, bias=False, activation=None, context=None):
        self.context = _context.resolve(context)
        lhs_shape, self.lhs_type, rhs_shape, self.rhs_type, g_local, k, n, transposed = gmm_operands(
            lhs, rhs, transpose_rhs)
        self.preferred_element_type = preferred_element_type
        self.out_type = _dtypes.dtype_name(preferred_element_type, "preferred_element_type")
        self.lhs_shape, self.rhs_shape, self.bias_shape = lhs_shape, rhs_shape, (g_local, n)
        self._plan = _GmmPlan(self.context, lhs_shape[0], k, n, group_sizes_list(group_sizes), g_local,
                              scalar_count(group_offset, "group_offset", 0), transposed, self.lhs_type,
                              self.rhs_type, self.out_type, bool(existing_out), tiling, 0, False, False, 0,
                              bool(bias), activation)
        self.out_shape = (lhs_shape[0], self._plan.n_out)

    @property
    def tiling(self) -> tuple[int, int, int]:
        """The tiling that runs (after clamping to the shape and the device's shared memory); where skewed
        groups take tile heights of their own (a GPU, sizes on the host), the first pass's."""
        return self._plan.tiling

    @property
    def schedule(self) -> str:
        """The schedule the kernel runs: "direct", "shared" or "matrix" (the automatic choice resolved)."""
        return self._plan.schedule

    def __call__(self, lhs, rhs, existing_out=None, *, bias=None, out=None):
        c = self.context
        o = out_array(self.out_shape, self.out_type, c, out)
        self._plan.run(on_device(lhs, "lhs", c, self.lhs_type, self.lhs_shape),
                       on_device(rhs, "rhs", c, self.rhs_type, self.rhs_shape), o,
                       None if existing_out is None else on_device(existing_out, "existing_out", c, self.out_type,
                                                                   self.out_shape),
                       None if bias is None else on_device(bias, "bias", c, "f32", self.bias_shape), None, None)
        return output(o, self.preferred_element_type, out)


def gmm(lhs, rhs, group_sizes, preferred_element_type=np.float32, tiling=None, group_offset=0, existing_out=None,
        transpose_rhs=False, *, bias=None, activation=None, context=None, out=None):
    """Grouped matmul, megablox's ``gmm``: out[m, n], rows of active group g = lhs[rows] @ rhs[g - group_offset].

    lhs [m, k]; rhs [G_local, k, n] ([G_local, n, k] with transpose_rhs; a block-format vkgmm.Array is
    [experts, n, k], transposed implied); group_sizes [G] (all groups; sum <= m); preferred_element_type
    np.float32, np.float16, "bf16" (uint16 bits out) or ml_dtypes.bfloat16; tiling None (automatic),
    (tm, tk, tn) or a callable (m, k, n) -> (tm, tk, tn); group_offset: the first group rhs holds;
    existing_out [m, n]: the rows outside the active groups (sharding stitches shards through it).
    Epilogues: bias [G_local, n] float32 before the activation; activation "swiglu", "swiglu_oai"
    (gpt-oss's clamped one) or "geglu" over [gate | up] (out has n / 2 columns). Returns numpy, or writes and returns `out` (a vkgmm.Array).
    Raises ContractError (a ValueError) for input the contract refuses, DeviceError (a RuntimeError) for
    device failures.
    """
    plan = GmmPlan(lhs, rhs, group_sizes, preferred_element_type, tiling, group_offset, existing_out is not None,
                   transpose_rhs, bias=bias is not None, activation=activation, context=context)
    return plan(lhs, rhs, existing_out, bias=bias, out=out)


class TgmmPlan:
    """tgmm planned once: ``plan(lhs, rhs, existing_out=None) -> out``.

    lhs [k, m], rhs [m, n], group_sizes [G]; out [num_actual_groups, k, n],
    out[j] = lhs[:, rows(group_offset + j)] @ rhs[rows(group_offset + j)] (+ existing_out[j]).
    """

    def __init__(self, lhs, rhs, group_sizes, preferred_element_type=np.float32, tiling=None, group_offset=0,
                 num_actual_groups=None, existing_out=False, *, context=None):
        self.context = _context.resolve(context)
        lhs_shape, self.lhs_type = spec(lhs, "lhs")
        rhs_shape, self.rhs_type = spec(rhs, "rhs")
        rank(lhs_shape, 2, "lhs", "[k, m]")
        rank(rhs_shape, 2, "rhs", "[m, n]")
        if lhs_shape[1] != rhs_shape[0]:
            raise ContractError(f"rhs: m = {rhs_shape[0]} (rhs is [m, n]) but lhs {tuple(lhs_shape)} has m = "
                                f"{lhs_shape[1]} (lhs is [k, m])")
        k, m = lhs_shape
        n = rhs_shape[1]
        self.lhs_shape, self.rhs_shape = tuple(lhs_shape), tuple(rhs_shape)
        self.preferred_element_type = preferred_element_type
        self.out_type = _dtypes.dtype_name(preferred_element_type, "preferred_element_type")
        groups = scalar_count(num_actual_groups, "num_actual_groups", None)
        if groups is not None and groups < 1:  # the library's -1 (all groups) is None here
            raise ContractError(f"num_actual_groups: {groups} must be >= 1 (None: G - group_offset)")
        self._plan = _TgmmPlan(self.context, m, k, n, group_sizes_list(group_sizes),
                               scalar_count(group_offset, "group_offset", 0), -1 if groups is None else groups,
                               self.lhs_type, self.rhs_type, self.out_type, bool(existing_out), tiling)
        self.out_shape = (self._plan.num_actual_groups, k, n)

    @property
    def tiling(self) -> tuple[int, int, int]:
        return self._plan.tiling

    @property
    def schedule(self) -> str:
        return self._plan.schedule

    def __call__(self, lhs, rhs, existing_out=None, *, out=None):
        c = self.context
        o = out_array(self.out_shape, self.out_type, c, out)
        self._plan.run(on_device(lhs, "lhs", c, self.lhs_type, self.lhs_shape),
                       on_device(rhs, "rhs", c, self.rhs_type, self.rhs_shape), o,
                       None if existing_out is None else on_device(existing_out, "existing_out", c, self.out_type,
                                                                   self.out_shape))
        return output(o, self.preferred_element_type, out)


def tgmm(lhs, rhs, group_sizes, preferred_element_type=np.float32, tiling=None, group_offset=0,
         num_actual_groups=None, existing_out=None, *, context=None, out=None):
    """Transposed grouped matmul, megablox's ``tgmm``: out[j, k, n] = lhs[:, rows(g)] @ rhs[rows(g), :] for
    g = group_offset + j, j < num_actual_groups (default G - group_offset), plus existing_out[j] when given.

    lhs [k, m], rhs [m, n], group_sizes [G]. An empty group gives 0 (or existing_out[j]). Other arguments
    as gmm's.
    """
    plan = TgmmPlan(lhs, rhs, group_sizes, preferred_element_type, tiling, group_offset, num_actual_groups,
                    existing_out is not None, context=context)
    return plan(lhs, rhs, existing_out, out=out)


class GmmBackwardPlan:
    """The gradients of out = gmm(lhs, rhs, group_sizes, ..., bias=, activation=) planned once:
    ``plan(lhs, rhs, d_out, *, bias=None) -> (d_lhs, d_rhs)``, or ``(d_lhs, d_rhs, d_bias)`` for a
    forward with bias.

    d_out has the forward's out type and shape ([m, n], or [m, n / 2] with a gated activation); d_lhs
    [m, k] and d_rhs (as rhs) have lhs's and rhs's types, d_bias is float32 [G_local, n]. Rows outside
    the active groups get 0 in d_lhs. Without an epilogue, d_lhs = gmm(d_out, rhs, transpose_rhs=not
    transpose_rhs) and d_rhs = tgmm(lhs.T, d_out) over the active groups; with one (bias=True, an
    activation), d_out is first taken through the activation at the forward's pre-activation, which the
    plan recomputes from lhs, rhs and bias. Block-format weights are frozen: d_rhs
    is None.
    """

    def __init__(self, lhs, rhs, group_sizes, d_out_type=np.float32, tiling=None, group_offset=0,
                 transpose_rhs=False, *, bias=False, activation=None, context=None):
        self.context = _context.resolve(context)
        lhs_shape, self.lhs_type, rhs_shape, self.rhs_type, g_local, k, n, transposed = gmm_operands(
            lhs, rhs, transpose_rhs)
        self.d_out_type = _dtypes.dtype_name(d_out_type, "d_out")
        self._plan = _GmmBackwardPlan(self.context, lhs_shape[0], k, n, group_sizes_list(group_sizes), g_local,
                                      scalar_count(group_offset, "group_offset", 0), transposed, self.lhs_type,
                                      self.rhs_type, self.d_out_type, tiling, bias=bool(bias),
                                      activation=activation)
        self.d_out_shape = (lhs_shape[0], self._plan.n_out)
        self.lhs_shape, self.rhs_shape = lhs_shape, rhs_shape
        self.bias_shape = (g_local, n) if bias else None

    def __call__(self, lhs, rhs, d_out, *, bias=None):
        c = self.context
        if (bias is None) != (self.bias_shape is None):
            raise ContractError("bias: the plan was made " + ("with bias=True: give the forward's bias" if bias is None
                                                              else "without bias: make it with bias=True"))
        frozen = self._plan.frozen_rhs
        d_lhs = Array.empty(list(self.lhs_shape), self.lhs_type, context=c)
        d_rhs = None if frozen else Array.empty(list(self.rhs_shape), self.rhs_type, context=c)
        d_bias = None if bias is None else Array.empty(list(self.bias_shape), "f32", context=c)
        # Frozen weights without an epilogue read no lhs (nothing to recompute, no d_rhs): it is checked all
        # the same, not uploaded.
        lhs_array = None
        if self._plan.reads_lhs:
            lhs_array = on_device(lhs, "lhs", c, self.lhs_type, self.lhs_shape)
        else:
            checked_operand(lhs, "lhs", c, self.lhs_type, self.lhs_shape)
        self._plan.run(lhs_array,
                       on_device(rhs, "rhs", c, self.rhs_type, self.rhs_shape),
                       on_device(d_out, "d_out", c, self.d_out_type, self.d_out_shape),
                       d_lhs, d_rhs, bias=None if bias is None else on_device(bias, "bias", c, "f32", self.bias_shape),
                       d_bias=d_bias)
        grads = (d_lhs.numpy(), None if d_rhs is None else d_rhs.numpy())
        return grads if d_bias is None else grads + (d_bias.numpy(),)


def gmm_backward(lhs, rhs, group_sizes, d_out, tiling=None, group_offset=0, transpose_rhs=False, *, bias=None,
                 activation=None, context=None):
    """(d_lhs, d_rhs) of out = gmm(lhs, rhs, group_sizes, group_offset=..., transpose_rhs=...) for the
    cotangent d_out (megablox's custom VJP), or (d_lhs, d_rhs, d_bias) of a forward with bias=; with the
    forward's activation= its gradient is taken too: see GmmBackwardPlan. d_out's type is the forward's
    out type (preferred_element_type)."""
    _, d_type = spec(d_out, "d_out")
    plan = GmmBackwardPlan(lhs, rhs, group_sizes, d_type, tiling, group_offset, transpose_rhs,
                           bias=bias is not None, activation=activation, context=context)
    return plan(lhs, rhs, d_out, bias=bias)
