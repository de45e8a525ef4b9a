"""gmm_ids_vjp: the routed forward with its epilogue and its gradients, against a float64 numpy reference
of the forward and its derivatives, and against central differences of that reference."""

import numpy as np
import pytest

import vkgmm


def _gated(act, g, u):
    if act == "swiglu":
        return g / (1 + np.exp(-g)) * u
    if act == "geglu":
        return 0.5 * g * (1 + np.tanh(0.7978845608028654 * (g + 0.044715 * g ** 3))) * u
    gc, uc = np.minimum(g, 7.0), np.clip(u, -7.0, 7.0)  # swiglu_oai
    return (uc + 1) * gc / (1 + np.exp(-1.702 * gc))


def ref_forward(x, w, ids, weights, bias, act, offset):
    """out of gmm_ids in float64: per slot [T, top_k, n_out], or combined [T, n_out] with weights."""
    T, top_k = ids.shape
    e_local, _, n = w.shape
    n_out = n // 2 if act else n
    per = np.zeros((T, top_k, n_out))
    for t in range(T):
        for j in range(top_k):
            e = ids[t, j] - offset
            if 0 <= e < e_local:
                row = x[t, j] if x.ndim == 3 else x[t]
                h = row @ w[e] + (bias[e] if bias is not None else 0)
                per[t, j] = _gated(act, h[:n_out], h[n_out:]) if act else h
    return per if weights is None else np.einsum("tj,tjc->tc", weights, per)


def numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    flat, gf = x.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        keep = flat[i]
        flat[i] = keep + eps
        up = f()
        flat[i] = keep - eps
        down = f()
        flat[i] = keep
        gf[i] = (up - down) / (2 * eps)
    return g


@pytest.mark.parametrize("per_slot,combine,act,use_bias,offset,e_local", [
    (False, False, "swiglu", True, 0, 4),   # an up projection
    (True, True, None, True, 0, 4),         # a down projection
    (False, True, "geglu", False, 1, 2),    # a window of the experts
    (False, True, "swiglu_oai", True, 0, 4),
])
def test_gmm_ids_vjp_matches_float64(ctx, rng, per_slot, combine, act, use_bias, offset, e_local):
    T, top_k, E, k, n = 9, 2, 4, 6, 8
    ids = np.stack([rng.permutation(E)[:top_k] for _ in range(T)]).astype(np.int32)
    ids[2, 1] = -1
    x = rng.standard_normal((T, top_k, k) if per_slot else (T, k)).astype(np.float32)
    w = rng.standard_normal((e_local, k, n)).astype(np.float32)
    b = rng.standard_normal((e_local, n)).astype(np.float32) if use_bias else None
    weights = rng.uniform(0.1, 1, (T, top_k)).astype(np.float32) if combine else None
    n_out = n // 2 if act else n
    d_out = rng.standard_normal((T, n_out) if combine else (T, top_k, n_out)).astype(np.float32)

    out, grads = vkgmm.gmm_ids_vjp(x, w, ids, d_out, weights, bias=b, activation=act, group_offset=offset,
                                   num_experts=E)
    xd, wd = x.astype(np.float64), w.astype(np.float64)
    bd = None if b is None else b.astype(np.float64)
    wtd = None if weights is None else weights.astype(np.float64)
    np.testing.assert_allclose(out, ref_forward(xd, wd, ids, wtd, bd, act, offset), rtol=1e-4, atol=1e-4)

    def loss():
        return float(np.sum(d_out * ref_forward(xd, wd, ids, wtd, bd, act, offset)))

    assert set(grads) == {"lhs", "rhs"} | ({"bias"} if use_bias else set()) | ({"weights"} if combine else set())
    np.testing.assert_allclose(grads["lhs"], numeric_grad(loss, xd), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(grads["rhs"], numeric_grad(loss, wd), rtol=1e-3, atol=1e-4)
    if use_bias:
        np.testing.assert_allclose(grads["bias"], numeric_grad(loss, bd), rtol=1e-3, atol=1e-4)
    if combine:
        np.testing.assert_allclose(grads["weights"], numeric_grad(loss, wtd), rtol=1e-3, atol=1e-4)


def test_gmm_ids_vjp_is_deterministic(ctx, rng):
    T, top_k, E, k, n = 33, 3, 5, 16, 12
    ids = np.stack([rng.permutation(E)[:top_k] for _ in range(T)]).astype(np.int32)
    x = rng.standard_normal((T, k)).astype(np.float32)
    w = rng.standard_normal((E, k, n)).astype(np.float32)
    weights = rng.uniform(0.1, 1, (T, top_k)).astype(np.float32)
    d_out = rng.standard_normal((T, n // 2)).astype(np.float32)
    first = vkgmm.gmm_ids_vjp(x, w, ids, d_out, weights, activation="swiglu")[1]
    again = vkgmm.gmm_ids_vjp(x, w, ids, d_out, weights, activation="swiglu")[1]
    for name in first:
        assert np.array_equal(first[name], again[name]), name


def test_gmm_ids_vjp_refuses_a_wrong_cotangent(ctx, rng):
    ids = np.zeros((4, 1), np.int32)
    x, w = np.ones((4, 3), np.float32), np.ones((1, 3, 2), np.float32)
    with pytest.raises(vkgmm.ContractError, match="d_out"):
        vkgmm.gmm_ids_vjp(x, w, ids, np.ones((4, 3), np.float32))
