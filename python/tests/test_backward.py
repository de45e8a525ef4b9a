"""The gmm backward against the numpy reference and against finite differences of vkgmm's own gmm."""

import numpy as np
import pytest

import vkgmm
from conftest import assert_close, random_group_sizes, ref_gmm, ref_tgmm


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
