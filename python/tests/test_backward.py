"""The gmm backward against the numpy reference and against finite differences of vkgmm's own gmm."""

import numpy as np
import pytest

import vkgmm
from conftest import GATED, assert_close, epilogue, random_group_sizes, ref_gmm, ref_tgmm, starts


@pytest.mark.parametrize("transpose_rhs", [False, True])
@pytest.mark.parametrize("m,k,n,groups", [(128, 128, 128, 4), (96, 40, 24, 3)])
def test_backward_matches_reference(ctx, rng, m, k, n, groups, transpose_rhs):
    lhs = rng.standard_normal((m, k)).astype(np.float32)
    rhs = rng.standard_normal((groups, n, k) if transpose_rhs else (groups, k, n)).astype(np.float32)
    gs = random_group_sizes(rng, m - 7, groups, empty=(1,))
    d_out = rng.standard_normal((m, n)).astype(np.float32)
    d_lhs, d_rhs = vkgmm.gmm_backward(lhs, rhs, gs, d_out, transpose_rhs=transpose_rhs)
    assert d_lhs.shape == lhs.shape and d_rhs.shape == rhs.shape
    assert_close(d_lhs, ref_gmm(d_out, rhs, gs, transpose_rhs=not transpose_rhs), n)
    want = ref_tgmm(lhs.T, d_out, gs)
    assert_close(d_rhs, want.transpose(0, 2, 1) if transpose_rhs else want, m)


def test_backward_sharded(ctx, rng):
    m, k, n = 64, 32, 16
    lhs, rhs = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((2, k, n)).astype(np.float32)
    gs = random_group_sizes(rng, m, 5)
    d_out = rng.standard_normal((m, n)).astype(np.float32)
    d_lhs, d_rhs = vkgmm.gmm_backward(lhs, rhs, gs, d_out, group_offset=2)
    assert_close(d_lhs, ref_gmm(d_out, rhs.transpose(0, 2, 1), gs, group_offset=2), n)
    assert_close(d_rhs, ref_tgmm(lhs.T, d_out, gs, 2, 2), m)


def test_backward_against_finite_differences(ctx, rng):
    """<d_out, gmm(lhs + h*dl, rhs + h*dr)> changes at the rate <d_lhs, dl> + <d_rhs, dr>, through vkgmm's own
    forward: central differences in float64 of f32 results, with a step where both errors are small."""
    m, k, n, groups = 48, 24, 16, 3
    lhs = rng.standard_normal((m, k)).astype(np.float32)
    rhs = rng.standard_normal((groups, k, n)).astype(np.float32)
    gs = random_group_sizes(rng, m, groups)
    d_out = rng.standard_normal((m, n)).astype(np.float32)
    dl = rng.standard_normal((m, k)).astype(np.float32)
    dr = rng.standard_normal((groups, k, n)).astype(np.float32)
    d_lhs, d_rhs = vkgmm.gmm_backward(lhs, rhs, gs, d_out)

    def loss(h):
        out = vkgmm.gmm((lhs + h * dl).astype(np.float32), (rhs + h * dr).astype(np.float32), gs)
        return float(np.sum(out.astype(np.float64) * d_out))

    h = 1e-2  # the loss is quadratic in h: central differences are exact up to fp32 rounding
    numeric = (loss(h) - loss(-h)) / (2 * h)
    analytic = float(np.sum(d_lhs.astype(np.float64) * dl) + np.sum(d_rhs.astype(np.float64) * dr))
    assert abs(numeric - analytic) <= 1e-3 * max(1.0, abs(analytic)), (numeric, analytic)


def test_backward_plan_reused_and_frozen_quantized_weights(ctx, rng):
    m, k, n = 64, 64, 32
    lhs = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((2, n, k)).astype(np.float32)
    q = vkgmm.quantize(w, "q8_0")
    gs = random_group_sizes(rng, m, 2)
    plan = vkgmm.GmmBackwardPlan(lhs, q, gs)
    for _ in range(2):
        d_out = rng.standard_normal((m, n)).astype(np.float32)
        d_lhs, d_rhs = plan(lhs, q, d_out)
        assert d_rhs is None  # block-format weights are frozen
        assert_close(d_lhs, ref_gmm(d_out, vkgmm.dequantize(q), gs), n)


def _ref_epilogue_gmm(lhs, rhs, sizes, bias, activation, offset, transpose_rhs):
    """The forward with group sizes and an epilogue in float64: rows of no active group are 0."""
    w = rhs.transpose(0, 2, 1) if transpose_rhs else rhs
    n_out = w.shape[2] // (2 if activation in GATED else 1)
    out = np.zeros((lhs.shape[0], n_out))
    s = starts(sizes)
    for g in range(offset, min(len(sizes), offset + w.shape[0])):
        rows = slice(s[g], s[g + 1])
        out[rows] = epilogue(lhs[rows] @ w[g - offset], None if bias is None else bias[g - offset], activation)
    return out


def _numeric_grad(loss, x, eps=1e-6):
    """Central differences of a float64 loss in each element of x (changed in place, then restored)."""
    grad, flat = np.zeros_like(x), x.reshape(-1)
    for i in range(flat.size):
        keep = flat[i]
        flat[i] = keep + eps
        up = loss()
        flat[i] = keep - eps
        grad.reshape(-1)[i] = (up - loss()) / (2 * eps)
        flat[i] = keep
    return grad


@pytest.mark.parametrize("activation,use_bias,offset,g_local,transpose_rhs", [
    ("swiglu", True, 0, 4, False),
    ("geglu", False, 1, 2, True),   # a window of the groups, rhs [G_local, n, k]
    ("swiglu_oai", True, 0, 4, True),
    (None, True, 2, 2, False),      # bias alone
])
def test_backward_with_an_epilogue_matches_float64(ctx, rng, activation, use_bias, offset, g_local, transpose_rhs):
    m, k, n = 17, 6, 8
    sizes = [3, 0, 6, 4]  # 4 rows past the sum: in no group
    lhs = rng.standard_normal((m, k)).astype(np.float32)
    rhs = rng.standard_normal((g_local, n, k) if transpose_rhs else (g_local, k, n)).astype(np.float32)
    bias = rng.standard_normal((g_local, n)).astype(np.float32) if use_bias else None
    d_out = rng.standard_normal((m, n // 2 if activation else n)).astype(np.float32)
    grads = vkgmm.gmm_backward(lhs, rhs, sizes, d_out, group_offset=offset, transpose_rhs=transpose_rhs, bias=bias,
                               activation=activation)
    assert len(grads) == (3 if use_bias else 2)
    ld, rd = lhs.astype(np.float64), rhs.astype(np.float64)
    bd = None if bias is None else bias.astype(np.float64)

    def loss():
        return float(np.sum(d_out * _ref_epilogue_gmm(ld, rd, sizes, bd, activation, offset, transpose_rhs)))

    np.testing.assert_allclose(grads[0], _numeric_grad(loss, ld), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(grads[1], _numeric_grad(loss, rd), rtol=1e-3, atol=1e-4)
    if use_bias:
        assert grads[2].shape == bias.shape
        np.testing.assert_allclose(grads[2], _numeric_grad(loss, bd), rtol=1e-3, atol=1e-4)


def test_backward_plan_with_bias_reused_and_frozen_weights(ctx, rng):
    """A plan with an epilogue over block-format weights: lhs is read (the product is recomputed), d_rhs is
    None; called twice with new operands, and refused without the bias it was made with."""
    m, k, n = 24, 32, 16
    sizes = [10, 14]
    q = vkgmm.quantize(rng.standard_normal((2, n, k)).astype(np.float32), "q8_0")
    w = vkgmm.dequantize(q).astype(np.float64).transpose(0, 2, 1)  # [G, k, n]
    plan = vkgmm.GmmBackwardPlan(np.zeros((m, k), np.float32), q, sizes, bias=True, activation="swiglu")
    assert plan.d_out_shape == (m, n // 2) and plan.bias_shape == (2, n)
    for _ in range(2):
        lhs = rng.standard_normal((m, k)).astype(np.float32)
        bias = rng.standard_normal((2, n)).astype(np.float32)
        d_out = rng.standard_normal((m, n // 2)).astype(np.float32)
        d_lhs, d_rhs, d_bias = plan(lhs, q, d_out, bias=bias)
        assert d_rhs is None
        ld, bd = lhs.astype(np.float64), bias.astype(np.float64)

        def loss():
            return float(np.sum(d_out * _ref_epilogue_gmm(ld, w, sizes, bd, "swiglu", 0, False)))

        np.testing.assert_allclose(d_lhs, _numeric_grad(loss, ld), rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(d_bias, _numeric_grad(loss, bd), rtol=1e-3, atol=1e-4)
    with pytest.raises(vkgmm.ContractError, match="bias: the plan was made with bias=True"):
        plan(lhs, q, d_out)
    with pytest.raises(vkgmm.ContractError, match=r"d_out: expected shape \(24, 8\)"):
        plan(lhs, q, np.zeros((m, n), np.float32), bias=bias)
    plain = vkgmm.GmmBackwardPlan(lhs, q, sizes)
    with pytest.raises(vkgmm.ContractError, match="bias: the plan was made without bias"):
        plain(lhs, q, np.zeros((m, n), np.float32), bias=bias)
