"""Trains a small MoE layer to imitate a teacher layer with plain SGD, in Python: each step is one
vkgmm.moe_layer_vjp call with target=, the forward, the squared error's gradient and the backward in one
submit on the device; numpy does the update. The first step's update is checked against central finite
differences of a numpy forward in float64 (the same check as the C++ version's gradient_check.cpp).
Exits 1 unless that check passes and the loss falls by at least 10x; exits 77 (a skip, to ctest) where
numpy is missing.

Run with the package importable (PYTHONPATH=<build>/python, or an installed vkgmm)."""

import argparse
import sys

SKIP = 77  # ctest's SKIP_RETURN_CODE for this test (python/CMakeLists.txt)


def top_k_ids(np, w, x, top_k):
    """Each token's top_k experts by the float64 logits, best first, ties to the lower index (the device's
    rule), and the smallest gap between a token's last chosen logit and its best unchosen one."""
    logits = x.astype(np.float64) @ w["router_w"].astype(np.float64)
    order = np.argsort(-logits, axis=1, kind="stable")
    ids = order[:, :top_k]
    rows = np.arange(len(x))
    margin = np.min(logits[rows, order[:, top_k - 1]] - logits[rows, order[:, top_k]]) \
        if top_k < logits.shape[1] else np.inf
    return ids, margin


def mean_loss(np, w, x, target, ids):
    """1/(2T) sum |layer(x) - target|^2 in float64, each token's experts fixed to ids and its gate weights a
    softmax over those experts' logits: smooth in every parameter, router_w included (through the gates)."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    x = x.astype(np.float64)
    T, top_k = ids.shape
    f = w["w_down"].shape[1]
    chosen = np.take_along_axis(x @ w["router_w"], ids, axis=1)
    gates = np.exp(chosen - chosen[:, :1])
    gates /= gates.sum(axis=1, keepdims=True)
    y = np.zeros_like(x)
    for j in range(top_k):
        e = ids[:, j]
        u = np.einsum("ti,tic->tc", x, w["w_up"][e]) + w["b_up"][e]
        h = u[:, :f] / (1 + np.exp(-u[:, :f])) * u[:, f:]  # SwiGLU: silu(gate) * up
        y += gates[:, j:j + 1] * (np.einsum("ti,tic->tc", h, w["w_down"][e]) + w["b_down"][e])
    return 0.5 * float(np.sum((y - target) ** 2)) / T


def check_step(np, before, after, lr, x, target, top_k, device_loss, coordinates=16):
    """The first SGD step `after = before - lr * gradient of the mean loss`: the device's loss against
    mean_loss, and (before - after) / lr at random coordinates of every parameter against central finite
    differences of mean_loss. A dropped, sign-flipped or wrong gradient is off by 100% or more of it."""
    ids, margin = top_k_ids(np, before, x, top_k)
    if not margin > 1e-3:  # f32 logits of 16 terms are within ~1e-5 of these
        print(f"gradient check: a token's logits are {margin:.1e} from a tie, too close to know the device's "
              "routing: FAIL (another seed)")
        return False
    cpu_loss = mean_loss(np, before, x, target, ids)
    ok = abs(device_loss - cpu_loss) <= 1e-4 * cpu_loss
    print(f"gradient check: step 0 loss {device_loss:.6f}, numpy forward in float64 {cpu_loss:.6f}"
          + ("" if ok else "  FAIL"))
    rng = np.random.default_rng(2)
    step = 1e-3
    for name in ("router_w", "w_up", "b_up", "w_down", "b_down"):
        v0 = before[name]
        largest = worst = 0.0
        for i in rng.integers(0, v0.size, size=coordinates):
            moved = dict(before)
            losses, values = [], []
            for sign in (1, -1):
                v = v0.copy()
                # float32 weights: divided by the step actually taken, not the one asked for
                v.flat[i] = np.float32(float(v0.flat[i]) + sign * step)
                moved[name] = v
                losses.append(mean_loss(np, moved, x, target, ids))
                values.append(float(v.flat[i]))
            want = (losses[0] - losses[1]) / (values[0] - values[1])
            got = (float(v0.flat[i]) - float(after[name].flat[i])) / lr  # the update applied
            largest = max(largest, abs(want))
            worst = max(worst, abs(got - want) if np.isfinite(got) else np.inf)
        good = largest > 1e-3 and worst <= 1e-3 * largest + 2e-6
        print(f"gradient check: {name:8s} {coordinates} coordinates, largest {largest:.3e}, worst error "
              f"{worst:.2e}" + ("" if good else "  FAIL: the update is not the gradient"))
        ok = ok and good
    return ok


def main() -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    try:
        import numpy as np
    except ImportError:
        print("skipped: numpy is not installed (Debian: python3-numpy)")
        return SKIP
    import vkgmm

    rng = np.random.default_rng(1)
    T, d, f, E, top_k = 128, 16, 16, 4, 2

    def layer_weights(scale):
        return {"router_w": rng.standard_normal((d, E)).astype(np.float32),
                "w_up": (rng.standard_normal((E, d, 2 * f)) * scale).astype(np.float32),
                "w_down": (rng.standard_normal((E, f, d)) * scale).astype(np.float32),
                "b_up": (rng.standard_normal((E, 2 * f)) * scale).astype(np.float32),
                "b_down": (rng.standard_normal((E, d)) * scale).astype(np.float32)}

    teacher, student = layer_weights(0.4), layer_weights(0.2)
    x = rng.standard_normal((T, d)).astype(np.float32)

    def call(w, **kw):
        return dict(top_k=top_k, b_up=w["b_up"], b_down=w["b_down"], **kw)

    target = vkgmm.moe_layer(x, teacher["router_w"], teacher["w_up"], teacher["w_down"], **call(teacher))
    lr, first, loss, gradients_ok = 0.1, None, None, False
    initial = {name: v.copy() for name, v in student.items()}  # the first step is checked against numpy
    for step in range(301):
        y, grads = vkgmm.moe_layer_vjp(x, student["router_w"], student["w_up"], student["w_down"],
                                       **call(student, target=target))
        loss = 0.5 * float(np.sum((y - target) ** 2)) / T
        first = loss if first is None else first
        if step % 50 == 0:
            print(f"step {step:3d}  loss {loss:.6f}")
        if step == 300:
            break
        for name in student:  # the gradients are of the sum over tokens: SGD on the mean
            student[name] -= lr * grads[name] / T
        if step == 0:
            gradients_ok = check_step(np, initial, student, lr, x, target, top_k, first)
    print(f"loss {first:.6f} -> {loss:.6f} ({first / loss:.1f}x lower)")
    ok = True
    if not gradients_ok:
        print("FAIL: the first step's update differs from numpy's finite differences", file=sys.stderr)
        ok = False
    if not loss * 10 <= first:
        print("FAIL: the loss fell by less than 10x", file=sys.stderr)
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
