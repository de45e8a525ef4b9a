"""Trains a small MoE layer to imitate a teacher layer with plain SGD, in Python: each step is one
vkgmm.moe_layer_vjp call with target=, the forward, the squared error's gradient and the backward in one
submit on the device; numpy does the update. Exits nonzero unless the loss falls by at least 10x.

Run with the package importable (PYTHONPATH=<build>/python, or an installed vkgmm)."""

import sys

import numpy as np

import vkgmm


def main() -> int:
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
    lr, first, loss = 0.1, None, None
    for step in range(301):
        y, grads = vkgmm.moe_layer_vjp(x, student["router_w"], student["w_up"], student["w_down"],
                                       **call(student, target=target))
        loss = 0.5 * float(np.sum((y - target) ** 2)) / T
        first = loss if first is None else first
        if step % 50 == 0:
            print(f"step {step:3d}  loss {loss:.6f}")
        for name in student:  # the gradients are of the sum over tokens: SGD on the mean
            student[name] -= lr * grads[name] / T
    print(f"loss {first:.6f} -> {loss:.6f} ({first / loss:.1f}x lower)")
    return 0 if loss * 10 <= first else 1


if __name__ == "__main__":
    sys.exit(main())
