"""vkgmm.top_k against a numpy top-k and softmax, and a whole MoE layer in Python: top_k -> gmm_ids up with
SwiGLU -> gmm_ids down combined, against a float64 token-by-token reference. vkgmm.top_k_backward against
a numpy gradient of the weights, itself checked by finite differences."""

import numpy as np
import pytest

import vkgmm


def reference_top_k(logits, k, renormalize):
    # Highest first, the lower expert on ties: a stable sort of the negated logits.
    order = np.argsort(-logits, axis=1, kind="stable")[:, :k]
    lg = logits.astype(np.float64)
    terms = np.exp(lg - lg.max(axis=1, keepdims=True))
    chosen = np.take_along_axis(terms, order, axis=1)
    denom = chosen.sum(axis=1, keepdims=True) if renormalize else terms.sum(axis=1, keepdims=True)
    return order.astype(np.int32), chosen / denom


@pytest.mark.parametrize("tokens,experts,k", [(1, 1, 1), (5, 8, 2), (67, 128, 8), (33, 6, 6)])
@pytest.mark.parametrize("renormalize", [True, False])
def test_top_k_matches_numpy(ctx, rng, tokens, experts, k, renormalize):
    logits = rng.normal(0, 2, (tokens, experts)).astype(np.float32)
    ids, weights = vkgmm.top_k(logits, k, renormalize)
    want_ids, want_w = reference_top_k(logits, k, renormalize)
    assert ids.dtype == np.int32 and ids.shape == (tokens, k)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_allclose(weights, want_w, rtol=2e-6, atol=1e-7)


def test_top_k_refuses(ctx):
    with pytest.raises(vkgmm.ContractError, match="top_k"):
        vkgmm.top_k(np.zeros((4, 3), np.float32), 4)
    with pytest.raises(vkgmm.ContractError, match="logits"):
        vkgmm.top_k(np.zeros((4, 3, 2), np.float32), 1)


def weights_for(logits, ids, renormalize):
    """The forward's weights for fixed ids in float64 (ids outside [0, E) weigh 0 and leave the sums)."""
    lg = logits.astype(np.float64)
    terms = np.exp(lg - lg.max(axis=1, keepdims=True))
    valid = (ids >= 0) & (ids < logits.shape[1])
    chosen = np.where(valid, np.take_along_axis(terms, np.where(valid, ids, 0), axis=1), 0.0)
    denom = chosen.sum(axis=1, keepdims=True) if renormalize else terms.sum(axis=1, keepdims=True)
    return chosen / denom


def reference_top_k_backward(logits, ids, weights, d_weights, renormalize):
    """d_logits in float64: renormalized, w_j * (d_w_j - s) at each valid slot's expert; else p * (g - s)."""
    T, E = logits.shape
    valid = (ids >= 0) & (ids < E)
    w = weights.astype(np.float64)
    dw = np.where(valid, d_weights.astype(np.float64), 0.0)
    s = (dw * w).sum(axis=1, keepdims=True)
    rows = np.repeat(np.arange(T)[:, None], ids.shape[1], axis=1)
    d = np.zeros((T, E))
    if renormalize:
        np.add.at(d, (rows[valid], ids[valid]), (w * (dw - s))[valid])
        return d
    g = np.zeros((T, E))
    np.add.at(g, (rows[valid], ids[valid]), dw[valid])
    lg = logits.astype(np.float64)
    p = np.exp(lg - lg.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True) * (g - s)


@pytest.mark.parametrize("renormalize", [True, False])
def test_reference_top_k_backward_is_the_gradient(rng, renormalize):
    logits = rng.normal(0, 2, (3, 6)).astype(np.float32)
    ids = np.array([[4, 1, 4], [-1, 5, 6], [0, 3, 2]], np.int32)  # a twice-chosen expert, bad ids
    d_w = rng.normal(0, 1, ids.shape)
    grad = reference_top_k_backward(logits, ids, weights_for(logits, ids, renormalize), d_w, renormalize)
    h = 1e-6
    for t, e in np.ndindex(*logits.shape):
        up, down = logits.astype(np.float64), logits.astype(np.float64)
        up[t, e] += h
        down[t, e] -= h
        fd = ((d_w * weights_for(up, ids, renormalize)).sum() - (d_w * weights_for(down, ids, renormalize)).sum()) / (2 * h)
        assert abs(grad[t, e] - fd) < 1e-6, (t, e)


@pytest.mark.parametrize("tokens,experts,k", [(1, 1, 1), (7, 5, 2), (33, 64, 8), (5, 6, 6)])
@pytest.mark.parametrize("renormalize", [True, False])
def test_top_k_backward_matches_numpy(ctx, rng, tokens, experts, k, renormalize):
    logits = rng.normal(0, 2, (tokens, experts)).astype(np.float32)
    ids, weights = vkgmm.top_k(logits, k, renormalize)
    d_w = rng.normal(0, 1, (tokens, k)).astype(np.float32)
    d_logits = vkgmm.top_k_backward(logits, ids, weights, d_w, renormalize)
    assert d_logits.dtype == np.float32 and d_logits.shape == (tokens, experts)
    want = reference_top_k_backward(logits, ids, weights, d_w, renormalize)
    np.testing.assert_allclose(d_logits, want, rtol=1e-5, atol=1e-6 * max(1.0, np.abs(d_w).sum(axis=1).max()))


def test_top_k_backward_skips_bad_ids(ctx, rng):
    logits = rng.normal(0, 1, (3, 4)).astype(np.float32)
    ids = np.array([[2, -1], [4, 99], [1, 1]], np.int32)
    weights = rng.random((3, 2)).astype(np.float32)
    d_w = rng.normal(0, 1, (3, 2)).astype(np.float32)
    for renormalize in (True, False):
        d_logits = vkgmm.top_k_backward(logits, ids, weights, d_w, renormalize)
        want = reference_top_k_backward(logits, ids, weights, d_w, renormalize)
        np.testing.assert_allclose(d_logits, want, rtol=1e-5, atol=1e-6)
        assert np.all(d_logits[1] == 0)  # no valid id: no gradient


def test_top_k_backward_refuses(ctx):
    logits = np.zeros((4, 3), np.float32)
    ids, w = np.zeros((4, 2), np.int32), np.zeros((4, 2), np.float32)
    with pytest.raises(vkgmm.ContractError, match="d_weights"):
        vkgmm.top_k_backward(logits, ids, w, np.zeros((4, 3), np.float32))
    with pytest.raises(vkgmm.ContractError, match="ids"):
        vkgmm.top_k_backward(logits, ids[:3], w, w)
    with pytest.raises(vkgmm.ContractError, match="top_k_backward: top_k"):
        vkgmm.top_k_backward(logits, np.zeros((4, 4), np.int32), np.zeros((4, 4), np.float32),
                             np.zeros((4, 4), np.float32))


def test_moe_layer(ctx, rng):
    T, d, ff, E, k = 19, 32, 24, 6, 2
    x = rng.uniform(-1, 1, (T, d)).astype(np.float32)
    router = rng.uniform(-1, 1, (d, E)).astype(np.float32)
    up = rng.uniform(-0.2, 0.2, (E, d, 2 * ff)).astype(np.float32)
    down = rng.uniform(-0.2, 0.2, (E, ff, d)).astype(np.float32)
    logits = vkgmm.gmm(x, router[None], np.array([T], np.int32))
    ids, weights = vkgmm.top_k(logits, k)
    h = vkgmm.gmm_ids(x, up, ids, activation="swiglu")
    y = vkgmm.gmm_ids(h, down, ids, weights)
    want = np.zeros((T, d))
    for t in range(T):
        for j in range(k):
            e = ids[t, j]
            u = x[t].astype(np.float64) @ up[e]
            g = u[:ff] / (1 + np.exp(-u[:ff])) * u[ff:]
            want[t] += weights[t, j] * (g @ down[e])
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
