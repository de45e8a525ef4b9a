"""Shared pieces of the Python tests: one validated Context for the session (every validation message
fails the test that caused it), numpy float64 references of the ops, and JAX tpu_gmm_test's group sizes
and tolerances."""

import gc

import numpy as np
import pytest

import vkgmm


@pytest.fixture(scope="session")
def ctx():
    c = vkgmm.Context(validate=True)
    vkgmm.set_default_context(c)
    yield c
    vkgmm.set_default_context(None)


@pytest.fixture(autouse=True)
def no_validation_messages(ctx):
    yield
    assert ctx.take_validation_messages() == []


@pytest.fixture
def rng(request):
    # A seed per test, stable across runs: a failure reproduces.
    return np.random.default_rng(_seed(request.node.name))


def _seed(name: str) -> int:
    return sum((i + 1) * ord(ch) for i, ch in enumerate(name)) % (2**32)


def random_group_sizes(rng, m, groups, empty=()):
    """JAX tpu_gmm_test's group sizes: a random partition of the m rows (cuts drawn with replacement, so
    groups may be empty), with the groups in `empty` forced empty too."""
    live = [g for g in range(groups) if g not in empty]
    sizes = np.zeros(groups, dtype=np.int32)
    if live:
        cuts = np.sort(rng.integers(0, m + 1, size=len(live) - 1))
        sizes[live] = np.diff(np.concatenate([[0], cuts, [m]]))
    return sizes


def tolerance(k, low_precision):
    """JAX tpu_gmm_test's: atol 1e-3, rtol 1e-5 (f32) or 1e-2 (a 16-bit operand or output); atol widened
    past sums of 128 terms by sqrt(k / 128), as vkgmm's own checks do (fp32 rounding grows so)."""
    return 1e-3 * np.sqrt(max(k, 128) / 128), 1e-2 if low_precision else 1e-5


def assert_close(got, want, k, low_precision=False):
    atol, rtol = tolerance(k, low_precision)
    got = vkgmm.to_float32(got) if got.dtype == np.uint16 else got.astype(np.float64)
    np.testing.assert_allclose(got, want, atol=atol, rtol=rtol)


def starts(group_sizes):
    return np.concatenate([[0], np.cumsum(group_sizes)]).astype(np.int64)


def ref_gmm(lhs, rhs, group_sizes, group_offset=0, existing_out=None, transpose_rhs=False):
    """megablox's reference: per group, lhs rows @ rhs[g - group_offset] in float64; other rows from
    existing_out or 0."""
    lhs, rhs = np.asarray(lhs, np.float64), np.asarray(rhs, np.float64)
    out = np.zeros((lhs.shape[0], rhs.shape[1] if transpose_rhs else rhs.shape[2]))
    if existing_out is not None:
        out[:] = existing_out
    s = starts(group_sizes)
    for g in range(group_offset, min(len(group_sizes), group_offset + rhs.shape[0])):
        w = rhs[g - group_offset].T if transpose_rhs else rhs[g - group_offset]
        out[s[g]:s[g + 1]] = lhs[s[g]:s[g + 1]] @ w
    return out


def ref_tgmm(lhs, rhs, group_sizes, group_offset=0, num_actual_groups=None, existing_out=None):
    lhs, rhs = np.asarray(lhs, np.float64), np.asarray(rhs, np.float64)
    groups = len(group_sizes) - group_offset if num_actual_groups is None else num_actual_groups
    out = np.zeros((groups, lhs.shape[0], rhs.shape[1]))
    if existing_out is not None:
        out[:] = existing_out
    s = starts(group_sizes)
    for j in range(groups):
        g = group_offset + j
        out[j] += lhs[:, s[g]:s[g + 1]] @ rhs[s[g]:s[g + 1]]
    return out


GATED = ("swiglu", "swiglu_oai", "geglu")


def gated(gate, up, activation):
    """The gated activations over [gate | up] (include/vkgmm/ops.hpp)."""
    if activation == "swiglu":
        return gate / (1 + np.exp(-gate)) * up
    if activation == "swiglu_oai":
        g, u = np.minimum(gate, 7.0), np.clip(up, -7.0, 7.0)
        return (u + 1) * g / (1 + np.exp(-1.702 * g))
    if activation == "geglu":
        return 0.5 * gate * (1 + np.tanh(np.sqrt(2 / np.pi) * (gate + 0.044715 * gate ** 3))) * up
    raise ValueError(activation)


def epilogue(x, bias_row=None, activation=None):
    if bias_row is not None:
        x = x + bias_row
    if activation in GATED:
        gate, up = np.split(x, 2, axis=-1)
        x = gated(gate, up, activation)
    return x


def ref_ids(lhs, w, ids, weights=None, group_offset=0, bias=None, activation=None, existing_out=None):
    """docs/contract.md's routing: w [E_local, k, n] float64; slots of experts outside the window keep
    existing_out (per slot) or add nothing (combined)."""
    T, top_k = ids.shape
    n_out = w.shape[2] // (2 if activation in GATED else 1)
    per_slot = np.zeros((T, top_k, n_out)) if existing_out is None or weights is not None else existing_out.astype(np.float64)
    combined = np.zeros((T, n_out)) if existing_out is None or weights is None else existing_out.astype(np.float64)
    for t in range(T):
        for j in range(top_k):
            e = ids[t, j] - group_offset
            if ids[t, j] < 0 or not 0 <= e < w.shape[0]:
                continue
            row = lhs[t, j] if lhs.ndim == 3 else lhs[t]
            y = epilogue(row.astype(np.float64) @ w[e], None if bias is None else bias[e], activation)
            if weights is None:
                per_slot[t, j] = y
            else:
                combined[t] += weights[t, j] * y
    return per_slot if weights is None else combined


def collect_teardown_messages():
    gc.collect()
    return vkgmm._vkgmm._take_teardown_messages()
