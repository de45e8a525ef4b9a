"""moe_layer and moe_layer_vjp against a float64 numpy layer written from the definition, its gradients
against central differences (the top-k choice held fixed by well separated logits), and shards."""

import numpy as np
import pytest

import vkgmm


def silu(g):
    return g / (1 + np.exp(-g))


def ref_layer(x, rw, wu, wd, bu, bd, top_k, renormalize=True, offset=0):
    logits = x @ rw
    T, E = logits.shape
    f = wd.shape[1]
    y = np.zeros((T, x.shape[1]))
    for t in range(T):
        order = np.argsort(-logits[t], kind="stable")[:top_k]
        p = np.exp(logits[t] - logits[t].max())
        w = p[order] / (p[order].sum() if renormalize else p.sum())
        for j, e in enumerate(order):
            if not offset <= e < offset + wu.shape[0]:
                continue
            h = x[t] @ wu[e - offset] + (0 if bu is None else bu[e - offset])
            y[t] += w[j] * (silu(h[:f]) * h[f:] @ wd[e - offset] + (0 if bd is None else bd[e - offset]))
    return y


def make(rng, T=6, d=5, f=4, E=4):
    x = rng.standard_normal((T, d))
    rw = rng.standard_normal((d, E)) * 3  # well separated logits: no near ties
    wu = rng.standard_normal((E, d, 2 * f)) * 0.5
    wd = rng.standard_normal((E, f, d)) * 0.5
    bu, bd = rng.standard_normal((E, 2 * f)) * 0.5, rng.standard_normal((E, d)) * 0.5
    return [a.astype(np.float32).astype(np.float64) for a in (x, rw, wu, wd, bu, bd)]


@pytest.mark.parametrize("renormalize", [True, False])
def test_moe_layer_vjp_matches_float64(ctx, rng, renormalize):
    x, rw, wu, wd, bu, bd = make(rng)
    d_y = rng.standard_normal(x.shape).astype(np.float32)
    f32 = [a.astype(np.float32) for a in (x, rw, wu, wd, bu, bd)]
    y = vkgmm.moe_layer(*f32[:4], top_k=2, b_up=f32[4], b_down=f32[5], renormalize=renormalize)
    np.testing.assert_allclose(y, ref_layer(x, rw, wu, wd, bu, bd, 2, renormalize), rtol=1e-4, atol=1e-4)
    y2, grads = vkgmm.moe_layer_vjp(*f32[:4], d_y, top_k=2, b_up=f32[4], b_down=f32[5], renormalize=renormalize)
    assert np.array_equal(y, y2)
    assert set(grads) == {"x", "router_w", "w_up", "w_down", "b_up", "b_down"}
    params = {"x": x, "router_w": rw, "w_up": wu, "w_down": wd, "b_up": bu, "b_down": bd}
    for name, v in params.items():
        num = np.zeros_like(v)
        for i in range(v.size):
            keep = v.flat[i]
            v.flat[i] = keep + 1e-6
            up = np.sum(d_y * ref_layer(x, rw, wu, wd, bu, bd, 2, renormalize))
            v.flat[i] = keep - 1e-6
            down = np.sum(d_y * ref_layer(x, rw, wu, wd, bu, bd, 2, renormalize))
            v.flat[i] = keep
            num.flat[i] = (up - down) / 2e-6
        np.testing.assert_allclose(grads[name], num, rtol=2e-3, atol=2e-3, err_msg=name)


def test_moe_layer_shards_add_up(ctx, rng):
    x, rw, wu, wd, bu, bd = [a.astype(np.float32) for a in make(rng)]
    d_y = rng.standard_normal(x.shape).astype(np.float32)
    y, g = vkgmm.moe_layer_vjp(x, rw, wu, wd, d_y, top_k=2, b_up=bu, b_down=bd)
    parts = [vkgmm.moe_layer_vjp(x, rw, wu[o:o + 2], wd[o:o + 2], d_y, top_k=2, b_up=bu[o:o + 2],
                                 b_down=bd[o:o + 2], expert_offset=o) for o in (0, 2)]
    np.testing.assert_allclose(parts[0][0] + parts[1][0], y, rtol=1e-5, atol=1e-5)
    for name in ("x", "router_w"):
        np.testing.assert_allclose(parts[0][1][name] + parts[1][1][name], g[name], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.concatenate([parts[0][1]["w_up"], parts[1][1]["w_up"]]), g["w_up"], rtol=1e-6)


def test_moe_layer_refuses_mismatched_shapes(ctx, rng):
    x, rw, wu, wd, _, _ = [a.astype(np.float32) for a in make(rng)]
    with pytest.raises(vkgmm.ContractError, match="w_down"):
        vkgmm.moe_layer(x, rw, wu, wd[:, :, :3], top_k=2)
    with pytest.raises(vkgmm.ContractError, match="router_w"):
        vkgmm.moe_layer(x, rw[:3], wu, wd, top_k=2)
    # Biases of another shape but as many values: refused, as are the wrong count and a fractional top_k.
    e_local, n_up, d = wu.shape[0], wu.shape[2], wd.shape[2]
    b_up, b_down = np.zeros((e_local, n_up), np.float32), np.zeros((e_local, d), np.float32)
    with pytest.raises(vkgmm.ContractError, match=r"b_up: expected shape \(%d, %d\)" % (e_local, n_up)):
        vkgmm.moe_layer(x, rw, wu, wd, top_k=2, b_up=b_up.T.copy(), b_down=b_down)
    with pytest.raises(vkgmm.ContractError, match=r"b_down: expected shape \(%d, %d\)" % (e_local, d)):
        vkgmm.moe_layer_vjp(x, rw, wu, wd, np.zeros_like(x), top_k=2, b_up=b_up, b_down=b_down[:1])
    with pytest.raises(vkgmm.ContractError, match="top_k: expected an integer"):
        vkgmm.moe_layer(x, rw, wu, wd, top_k=1.9)
    with pytest.raises(TypeError, match="top_k: expected an integer .* got None"):
        vkgmm.moe_layer(x, rw, wu, wd, top_k=None)
    # An odd [gate | up] width has the shape its own width asks for: what is wrong is the width.
    with pytest.raises(vkgmm.ContractError, match=r"w_up: 7 columns \[gate \| up\] .* 'swiglu' takes an even"):
        vkgmm.moe_layer(x, rw, wu[:, :, :7], wd, top_k=2)
    # Float weights in GGUF's layout ([E, n, k], as read_gguf gives them) are named as such.
    assert wu.shape[1] != wu.shape[2]  # d != 2f: the swapped tensor has another shape
    with pytest.raises(vkgmm.ContractError, match=r"w_up: .*layout \[E, n, k\]\? pass transpose_weights=True"):
        vkgmm.moe_layer(x, rw, wu.transpose(0, 2, 1).copy(), wd, top_k=2)
    # A window of experts past the router's: named by the operand that gives the count.
    with pytest.raises(vkgmm.ContractError, match=r"w_up: %d experts \(w_up.shape\[0\]\) from expert_offset = 3 pass "
                       r"num_experts = %d" % (e_local, rw.shape[1])):
        vkgmm.moe_layer(x, rw, wu, wd, top_k=2, expert_offset=3)


def test_moe_layer_vjp_with_a_target_is_the_squared_errors_gradient(ctx, rng):
    x, rw, wu, wd, bu, bd = [a.astype(np.float32) for a in make(rng)]
    target = rng.standard_normal(x.shape).astype(np.float32)
    y, g = vkgmm.moe_layer_vjp(x, rw, wu, wd, top_k=2, b_up=bu, b_down=bd, target=target)
    y2, g2 = vkgmm.moe_layer_vjp(x, rw, wu, wd, y - target, top_k=2, b_up=bu, b_down=bd)
    np.testing.assert_allclose(y, y2, rtol=1e-6, atol=1e-6)
    for name in g2:
        np.testing.assert_allclose(g[name], g2[name], rtol=1e-4, atol=1e-5, err_msg=name)
    with pytest.raises(vkgmm.ContractError, match="give one of them"):
        vkgmm.moe_layer_vjp(x, rw, wu, wd, y, top_k=2, target=target)


def test_moe_layer_vjp_takes_a_target_array(ctx, rng):
    x, rw, wu, wd, bu, bd = make(rng)
    f32 = [a.astype(np.float32) for a in (x, rw, wu, wd, bu, bd)]
    target = rng.standard_normal(x.shape).astype(np.float32)
    y, g = vkgmm.moe_layer_vjp(*f32[:4], top_k=2, b_up=f32[4], b_down=f32[5], target=vkgmm.Array(target))
    np.testing.assert_allclose(y, ref_layer(x, rw, wu, wd, bu, bd, 2), rtol=1e-4, atol=1e-4)
    y2, g2 = vkgmm.moe_layer_vjp(*f32[:4], top_k=2, b_up=f32[4], b_down=f32[5], target=target)
    assert np.array_equal(y, y2) and set(g) == set(g2)
    for name in g2:
        np.testing.assert_array_equal(g[name], g2[name], err_msg=name)


@pytest.mark.parametrize("frozen", ["w_up", "w_down"])
def test_moe_layer_projections_take_their_own_types(ctx, rng, frozen):
    # One projection in q8_0 (GGUF's layout), the other f32: the same layer as all-f32 weights holding the
    # q8_0 weights' values, with no gradient for the frozen projection.
    x, rw, wu, wd, bu, bd = make(rng, T=5, d=32, f=32)
    f32 = [a.astype(np.float32) for a in (x, rw, wu, wd, bu, bd)]
    d_y = rng.standard_normal(x.shape).astype(np.float32)
    weights = {"w_up": f32[2], "w_down": f32[3]}
    q = vkgmm.quantize(np.ascontiguousarray(weights[frozen].transpose(0, 2, 1)), "q8_0")
    held = np.ascontiguousarray(vkgmm.dequantize(q).transpose(0, 2, 1))
    mixed = dict(weights, **{frozen: q})
    plain = dict(weights, **{frozen: held})
    y, grads = vkgmm.moe_layer_vjp(f32[0], f32[1], mixed["w_up"], mixed["w_down"], d_y, top_k=2, b_up=f32[4],
                                   b_down=f32[5])
    y_ref, grads_ref = vkgmm.moe_layer_vjp(f32[0], f32[1], plain["w_up"], plain["w_down"], d_y, top_k=2,
                                           b_up=f32[4], b_down=f32[5])
    assert frozen not in grads and set(grads_ref) - set(grads) == {frozen}
    np.testing.assert_allclose(y, y_ref, rtol=1e-4, atol=1e-4)
    for name, g in grads.items():
        np.testing.assert_allclose(g, grads_ref[name], rtol=1e-4, atol=1e-4, err_msg=name)


def test_moe_layer_takes_transposed_float_weights(ctx, rng):
    """transpose_weights=True: w_up [E, 2f, d] and w_down [E, d, f] (GGUF's float tensors, PyTorch's Linear
    weights) give the layer's y and gradients, the weight gradients in the weights' layout."""
    x, rw, wu, wd, bu, bd = [a.astype(np.float32) for a in make(rng)]
    d_y = rng.standard_normal(x.shape).astype(np.float32)
    y, g = vkgmm.moe_layer_vjp(x, rw, wu, wd, d_y, top_k=2, b_up=bu, b_down=bd)
    wu_t, wd_t = wu.transpose(0, 2, 1).copy(), wd.transpose(0, 2, 1).copy()
    y_t, g_t = vkgmm.moe_layer_vjp(x, rw, wu_t, wd_t, d_y, top_k=2, b_up=bu, b_down=bd, transpose_weights=True)
    np.testing.assert_allclose(y_t, y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(vkgmm.moe_layer(x, rw, wu_t, wd_t, top_k=2, b_up=bu, b_down=bd,
                                               transpose_weights=True), y, rtol=1e-5, atol=1e-5)
    for name in ("x", "router_w", "b_up", "b_down"):
        np.testing.assert_allclose(g_t[name], g[name], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g_t["w_up"], g["w_up"].transpose(0, 2, 1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g_t["w_down"], g["w_down"].transpose(0, 2, 1), rtol=1e-5, atol=1e-5)
