"""vkgmm.top_k against a numpy top-k and softmax, and a whole MoE layer in Python: top_k -> gmm_ids up with
SwiGLU -> gmm_ids down combined, against a float64 token-by-token reference."""

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
