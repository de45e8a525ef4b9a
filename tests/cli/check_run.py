#!/usr/bin/env python3
"""End-to-end check of `vkgmm run`: random .npy inputs, the CLI's output against a float64 numpy model of
docs/contract.md, and the error contract (exit 1 or 2, one stderr line, no output file).

usage: check_run.py /path/to/vkgmm [--keep] [--only SUBSTRING]

Shapes stay small (m <= 256, k, n <= 128): the device may be a CPU emulator.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

import cli_edges

TIMEOUT_S = 600


# --- element types ----------------------------------------------------------------------------------

def bf16_round(x):
    """Round float32 values to bf16 (nearest even), returned as float32."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    r = u.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), x, r)


def round_to(dtype, x):
    """The value x becomes when stored as dtype ('f32', 'f16' or 'bf16'), as float64."""
    x = np.asarray(x)
    if dtype == "f32":
        return x.astype(np.float32).astype(np.float64)
    if dtype == "f16":
        return x.astype(np.float16).astype(np.float64)
    # float64 -> float32 -> bf16 double-rounds; the device rounds fp32 accumulators, so do the same.
    return bf16_round(x.astype(np.float32)).astype(np.float64)


def device_input(arr, input_dtype):
    """What the device sees for a lhs / rhs file: f16 files as they are, f32 files maybe rounded to bf16."""
    if arr.dtype == np.float16:
        return arr.astype(np.float64), "f16"
    if input_dtype == "bf16":
        return bf16_round(arr).astype(np.float64), "bf16"
    return arr.astype(np.float64), "f32"


# --- GGUF files (ggml's docs/gguf.md), for --rhs FILE.gguf:TENSOR -------------------------------------

# ggml type id, values per block, bytes per block.
GGML_TYPES = {"f32": (0, 1, 4), "f16": (1, 1, 2), "bf16": (30, 1, 2), "q8_0": (8, 32, 34), "q4_0": (2, 32, 18),
              "q4_K": (12, 256, 144), "q6_K": (14, 256, 210), "mxfp4": (39, 32, 17), "iq2_xxs": (16, 256, 66)}


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def write_gguf(path, tensors, alignment=32, version=3):
    """A GGUF file holding `tensors`, each (name, ne in GGUF order (ne[0] contiguous), type name, raw bytes),
    their data in order, each padded to `alignment` (written as general.alignment unless it is 32)."""
    kvs = [gguf_string("general.architecture") + struct.pack("<I", 8) + gguf_string("vkgmm-test")]
    if alignment != 32:
        kvs.append(gguf_string("general.alignment") + struct.pack("<II", 4, alignment))
    pad = lambda n: (n + alignment - 1) // alignment * alignment
    infos, data = b"", b""
    for name, ne, type_name, raw in tensors:
        infos += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        infos += struct.pack("<IQ", GGML_TYPES[type_name][0], len(data))
        data += raw + b"\0" * (pad(len(raw)) - len(raw))
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs) + infos
    with open(path, "wb") as f:
        f.write(head + b"\0" * (pad(len(head)) - len(head)) + data)


def q8_0_blocks(w):
    """GGUF q8_0 blocks of w (its last axis whole blocks of 32), round to nearest against the fp16 scale
    amax / 127, and the float64 values they hold."""
    x = w.reshape(-1, 32).astype(np.float32)
    d = (np.abs(x).max(axis=1) / 127).astype(np.float16)
    df = d.astype(np.float32)
    q = np.clip(np.rint(np.divide(x, df[:, None], out=np.zeros_like(x), where=df[:, None] != 0)), -127, 127)
    q = q.astype(np.int8)
    blocks = b"".join(s.tobytes() + v.tobytes() for s, v in zip(d, q))
    return blocks, (df[:, None].astype(np.float64) * q.astype(np.float64)).reshape(w.shape)


def gguf_cases(vkgmm, d, rng):
    """An f32 GGUF expert tensor [k, n, E] (memory [E, n, k]: a transposed f32 rhs) through gmm, with
    group sizes (3-D, with --check) and with ids (a 2-D tensor: one expert), and a q8_0 expert tensor
    (blocks made here, the model on the values they hold), against the float64 model."""
    results = []
    m, k, n, E = 48, 32, 24, 3
    lhs = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    w = rng.uniform(-1, 1, (E, n, k)).astype(np.float32)
    gs = split_rows(rng, m, E)
    path = os.path.join(d, "experts.gguf")
    q8_blocks, q8_values = q8_0_blocks(w)
    write_gguf(path, [("blk.0.ffn_gate_exps.weight", [k, n, E], "f32", w.tobytes()),
                      ("one", [k, n], "f32", w[1].tobytes()),
                      ("q", [32, 2, 2], "q8_0", bytes(4 * 34)),
                      ("q8", [k, n, E], "q8_0", q8_blocks)], alignment=64)
    np.save(os.path.join(d, "lhs.npy"), lhs)
    np.save(os.path.join(d, "gs.npy"), gs)
    ids = rng.integers(-1, 2, size=(m, 2)).astype(np.int32)
    np.save(os.path.join(d, "ids.npy"), ids)
    out = os.path.join(d, "out.npy")
    runs = [("gmm GGUF f32 rhs [k, n, E] --check",
             ["--group-sizes", os.path.join(d, "gs.npy"), "--rhs", path + ":blk.0.ffn_gate_exps.weight", "--check"],
             lambda: ref_gmm(lhs.astype(np.float64), w.astype(np.float64), gs, 0, True, None)),
            ("gmm GGUF f32 rhs [k, n] (E = 1), ids, group-offset 1",
             ["--ids", os.path.join(d, "ids.npy"), "--rhs", path + ":one", "--group-offset", "1", "--transpose-rhs"],
             lambda: ref_routed(lhs.astype(np.float64), w[1:2].astype(np.float64), ids, 1, True, None, None)),
            ("gmm GGUF q8_0 rhs [k, n, E] --check",
             ["--group-sizes", os.path.join(d, "gs.npy"), "--rhs", path + ":q8", "--check"],
             lambda: ref_gmm(lhs.astype(np.float64), q8_values, gs, 0, True, None))]
    for name, extra, model in runs:
        if os.path.exists(out):
            os.remove(out)
        code, stdout, err = run(vkgmm, ["gmm", "--lhs", os.path.join(d, "lhs.npy"), "--out", out] + extra)
        reason = None
        if code != 0 or err.strip():
            reason = "exit %s: %s" % (code, err.strip())
        else:
            got, want = np.load(out).astype(np.float64), model()
            if got.shape != want.shape:
                reason = "output shape %s, expected %s" % (got.shape, want.shape)
            elif not np.all(np.abs(got - want) <= 1e-3 + 1e-5 * np.abs(want)):
                reason = "max abs error %.3g" % np.abs(got - want).max()
        results.append((name, reason))
    return results


# --- the contract's semantics in float64 ----------------------------------------------------------

def starts_of(gs):
    return np.concatenate([[0], np.cumsum(gs)]).astype(np.int64)


def silu(x):
    return x / (1 + np.exp(-x))


def epilogue(prod, bias_row, activation):
    """docs/contract.md, "Epilogues": product (+ bias) -> activation ([gate | up] -> silu(gate) * up)."""
    if bias_row is not None:
        prod = prod + bias_row
    if activation in GATED:
        half = prod.shape[-1] // 2
        gate, up = prod[..., :half], prod[..., half:]
        if activation == "swiglu":
            prod = silu(gate) * up
        elif activation == "swiglu_oai":
            g, u = np.minimum(gate, 7.0), np.clip(up, -7.0, 7.0)
            prod = (u + 1) * g / (1 + np.exp(-1.702 * g))
        else:  # geglu, gelu's tanh form
            prod = 0.5 * gate * (1 + np.tanh(np.sqrt(2 / np.pi) * (gate + 0.044715 * gate ** 3))) * up
    return prod


GATED = ("swiglu", "swiglu_oai", "geglu")


def n_out_of(n, activation):
    return n // 2 if activation in GATED else n


def ref_gmm(lhs, rhs, gs, group_offset, transpose_rhs, existing, bias=None, activation=None):
    m = lhs.shape[0]
    n = rhs.shape[1] if transpose_rhs else rhs.shape[2]
    out = existing.copy() if existing is not None else np.zeros((m, n_out_of(n, activation)))
    st = starts_of(gs)
    for g in range(group_offset, group_offset + rhs.shape[0]):
        w = rhs[g - group_offset]
        if transpose_rhs:
            w = w.T
        b = bias[g - group_offset] if bias is not None else None
        out[st[g]:st[g + 1]] = epilogue(lhs[st[g]:st[g + 1]] @ w, b, activation)
    return out


def ref_routed(lhs, rhs, ids, group_offset, transpose_rhs, weights, existing, bias=None, activation=None):
    """docs/contract.md, "Routing by expert ids": per slot [T, top_k, n_out], or combined [T, n_out] with weights
    (the local slots in ascending j, then + existing_out). Slots outside the window: existing_out or 0."""
    T, top_k = ids.shape
    n = rhs.shape[1] if transpose_rhs else rhs.shape[2]
    n_out = n_out_of(n, activation)
    e_local = rhs.shape[0]
    if weights is None:
        out = existing.copy() if existing is not None else np.zeros((T, top_k, n_out))
    else:
        out = np.zeros((T, n_out))
    for t in range(T):
        acc = np.zeros(n_out)
        for j in range(top_k):
            e = int(ids[t, j])
            if not group_offset <= e < group_offset + e_local:  # -1, or another shard's expert
                continue
            row = lhs[t, j] if lhs.ndim == 3 else lhs[t]
            w = rhs[e - group_offset].T if transpose_rhs else rhs[e - group_offset]
            y = epilogue(row @ w, bias[e - group_offset] if bias is not None else None, activation)
            if weights is None:
                out[t, j] = y
            else:
                acc += weights[t, j] * y
        if weights is not None:
            out[t] = acc + (existing[t] if existing is not None else 0)
    return out


def ref_tgmm(lhs, rhs, gs, group_offset, num_groups, existing):
    k, n = lhs.shape[0], rhs.shape[1]
    out = np.zeros((num_groups, k, n)) if existing is None else existing.copy()
    st = starts_of(gs)
    for j in range(num_groups):
        g = group_offset + j
        out[j] += lhs[:, st[g]:st[g + 1]] @ rhs[st[g]:st[g + 1], :]
    return out


# --- cases ------------------------------------------------------------------------------------------

def split_rows(rng, total, groups, empty=()):
    """`groups` sizes summing to `total`, with the groups in `empty` forced to 0."""
    live = [g for g in range(groups) if g not in empty]
    cuts = np.sort(rng.integers(0, total + 1, size=len(live) - 1)) if live else []
    sizes = np.diff(np.concatenate([[0], cuts, [total]])).astype(np.int64) if live else []
    gs = np.zeros(groups, dtype=np.int64)
    for g, s in zip(live, sizes):
        gs[g] = s
    return gs


class Case:
    def __init__(self, name, op, m, k, n, gs, *, group_offset=None, g_local=None, num_actual_groups=None,
                 transpose_rhs=False, existing=False, lhs_dtype=np.float32, rhs_dtype=np.float32,
                 input_dtype=None, out_dtype=None, tiling=None, gs_dtype=np.int32, check=False, env=None,
                 device=False, bias=False, activation=None, top_k=None, num_experts=None, lhs_per_slot=False,
                 weights=False, ids_dtype=np.int32):
        """Routed by ids when top_k is set: m is T, gs unused, ids drawn from [-1, num_experts) (or a
        window of experts around group_offset + g_local when num_experts is None)."""
        self.__dict__.update(locals())
        del self.__dict__["self"]
        self.gs = np.asarray(gs if gs is not None else [], dtype=np.int64)


def gmm_cases(rng):
    c = []
    c.append(Case("gmm f32", "gmm", 64, 32, 48, split_rows(rng, 64, 4)))
    c.append(Case("gmm transpose-rhs", "gmm", 64, 32, 48, split_rows(rng, 64, 4), transpose_rhs=True))
    c.append(Case("gmm group-offset + existing-out", "gmm", 80, 24, 40, split_rows(rng, 80, 5),
                  group_offset=1, g_local=3, existing=True))
    c.append(Case("gmm group-offset, no existing-out", "gmm", 50, 16, 24, split_rows(rng, 50, 4),
                  group_offset=2, g_local=2, transpose_rhs=True))
    c.append(Case("gmm rows past sum(group_sizes)", "gmm", 96, 32, 32, split_rows(rng, 70, 3)))
    c.append(Case("gmm empty groups", "gmm", 60, 20, 36, split_rows(rng, 60, 6, empty=(0, 2, 5))))
    c.append(Case("gmm all groups empty + existing-out", "gmm", 20, 8, 8, [0, 0, 0], existing=True))
    c.append(Case("gmm f16 inputs", "gmm", 64, 32, 32, split_rows(rng, 64, 3),
                  lhs_dtype=np.float16, rhs_dtype=np.float16))
    c.append(Case("gmm f16 inputs, f16 out, existing-out", "gmm", 48, 32, 24, split_rows(rng, 40, 3),
                  lhs_dtype=np.float16, rhs_dtype=np.float16, out_dtype="f16", existing=True))
    c.append(Case("gmm input-dtype bf16", "gmm", 64, 32, 40, split_rows(rng, 64, 4), input_dtype="bf16"))
    c.append(Case("gmm input-dtype bf16, out bf16, existing-out", "gmm", 64, 48, 32, split_rows(rng, 64, 4),
                  input_dtype="bf16", out_dtype="bf16", existing=True, transpose_rhs=True))
    c.append(Case("gmm f32 in, out f16", "gmm", 40, 24, 24, split_rows(rng, 40, 2), out_dtype="f16"))
    c.append(Case("gmm f32 in, out bf16", "gmm", 40, 24, 24, split_rows(rng, 40, 2), out_dtype="bf16"))
    c.append(Case("gmm mixed f16 lhs, f32 rhs", "gmm", 32, 16, 16, split_rows(rng, 32, 2),
                  lhs_dtype=np.float16))
    c.append(Case("gmm odd shapes + tiling", "gmm", 37, 13, 7, split_rows(rng, 37, 3), tiling=(16, 8, 16)))
    c.append(Case("gmm tiling 8,4,8", "gmm", 45, 19, 21, split_rows(rng, 45, 4, empty=(1,)), tiling=(8, 4, 8),
                  existing=True))
    c.append(Case("gmm int64 group sizes", "gmm", 32, 16, 16, split_rows(rng, 32, 3), gs_dtype=np.int64))
    c.append(Case("gmm m = 0", "gmm", 0, 8, 8, [0, 0]))
    c.append(Case("gmm larger", "gmm", 256, 128, 128, split_rows(rng, 256, 8)))
    c.append(Case("gmm --check", "gmm", 64, 32, 32, split_rows(rng, 64, 4), existing=True, check=True))
    c.append(Case("gmm --check bf16", "gmm", 64, 32, 32, split_rows(rng, 60, 4), input_dtype="bf16",
                  out_dtype="bf16", check=True))
    return c


def epilogue_cases(rng):
    """--bias and --activation swiglu with --group-sizes (the product's n even; out has n / 2 columns)."""
    c = []
    c.append(Case("gmm bias", "gmm", 48, 16, 24, split_rows(rng, 48, 3), bias=True))
    c.append(Case("gmm swiglu", "gmm", 48, 16, 24, split_rows(rng, 40, 3), activation="swiglu"))
    c.append(Case("gmm bias + swiglu, group-offset + existing-out", "gmm", 60, 20, 32, split_rows(rng, 60, 5),
                  group_offset=1, g_local=3, existing=True, bias=True, activation="swiglu", transpose_rhs=True))
    c.append(Case("gmm bias + swiglu, bf16 in and out", "gmm", 40, 24, 16, split_rows(rng, 40, 2), bias=True,
                  activation="swiglu", input_dtype="bf16", out_dtype="bf16", existing=True))
    c.append(Case("gmm bias + swiglu --check", "gmm", 32, 16, 16, split_rows(rng, 32, 2), bias=True,
                  activation="swiglu", check=True))
    c.append(Case("device gmm bias + swiglu", "gmm", 64, 32, 48, split_rows(rng, 64, 4), bias=True,
                  activation="swiglu", existing=True, device=True))
    c.append(Case("gmm bias + swiglu_oai", "gmm", 40, 24, 32, split_rows(rng, 40, 3), bias=True,
                  activation="swiglu_oai"))
    c.append(Case("gmm geglu, transposed rhs", "gmm", 36, 16, 24, split_rows(rng, 36, 2), activation="geglu",
                  transpose_rhs=True))
    return c


def routed_cases(rng):
    """--ids (routing by expert ids): per slot and combined (--weights), lhs [T, k] and [T, top_k, k],
    a window of experts (--group-offset, E_local = rhs.shape[0]) with ids of other shards and -1."""
    c = []
    c.append(Case("routed per-slot", "gmm", 24, 16, 24, None, top_k=2, group_offset=2, g_local=3,
                  num_experts=6, existing=True))
    c.append(Case("routed combined", "gmm", 20, 16, 20, None, top_k=3, g_local=4, weights=True, existing=True,
                  transpose_rhs=True))
    c.append(Case("routed combined, no existing-out, group-offset", "gmm", 33, 12, 10, None, top_k=2,
                  group_offset=1, g_local=2, weights=True, num_experts=4))
    c.append(Case("routed per-slot, lhs per slot, int64 ids, f16 out", "gmm", 17, 8, 12, None, top_k=2,
                  g_local=3, lhs_per_slot=True, ids_dtype=np.int64, out_dtype="f16", existing=True))
    c.append(Case("routed combined, lhs per slot, bias + swiglu, bf16", "gmm", 16, 16, 24, None, top_k=2,
                  g_local=4, lhs_per_slot=True, weights=True, bias=True, activation="swiglu", input_dtype="bf16",
                  out_dtype="bf16", existing=True, num_experts=4))
    c.append(Case("routed per-slot, bias + swiglu, tiling", "gmm", 21, 12, 14, None, top_k=3, group_offset=1,
                  g_local=2, bias=True, activation="swiglu", tiling=(8, 4, 8), num_experts=5))
    c.append(Case("routed T = 0", "gmm", 0, 8, 8, None, top_k=2, g_local=2, weights=True))
    c.append(Case("routed combined --check", "gmm", 24, 16, 16, None, top_k=2, g_local=3, weights=True,
                  existing=True, bias=True, check=True, num_experts=3))
    c.append(Case("routed per-slot --check, f16 inputs", "gmm", 24, 16, 16, None, top_k=2, g_local=3,
                  lhs_dtype=np.float16, rhs_dtype=np.float16, check=True))
    return c


def tgmm_cases(rng):
    c = []
    c.append(Case("tgmm f32", "tgmm", 64, 32, 48, split_rows(rng, 64, 4)))
    c.append(Case("tgmm group-offset + num-actual-groups + existing-out", "tgmm", 80, 24, 40,
                  split_rows(rng, 80, 5), group_offset=1, num_actual_groups=2, existing=True))
    c.append(Case("tgmm group-offset, default num-actual-groups", "tgmm", 60, 16, 24, split_rows(rng, 60, 4),
                  group_offset=2))
    c.append(Case("tgmm empty groups, rows past sum", "tgmm", 90, 20, 28, split_rows(rng, 70, 6, empty=(0, 3)),
                  existing=True))
    # num_actual_groups = 0 is left out: the contract is silent and the library refuses it (needs >= 1).
    c.append(Case("tgmm f16 inputs, f16 out", "tgmm", 64, 32, 32, split_rows(rng, 64, 3),
                  lhs_dtype=np.float16, rhs_dtype=np.float16, out_dtype="f16"))
    c.append(Case("tgmm input-dtype bf16, out bf16, existing-out", "tgmm", 64, 24, 32, split_rows(rng, 64, 3),
                  input_dtype="bf16", out_dtype="bf16", existing=True))
    c.append(Case("tgmm out f16 + existing-out", "tgmm", 48, 16, 16, split_rows(rng, 48, 3), out_dtype="f16",
                  existing=True))
    c.append(Case("tgmm odd shapes + tiling", "tgmm", 41, 11, 9, split_rows(rng, 41, 3), tiling=(8, 16, 8)))
    c.append(Case("tgmm larger", "tgmm", 256, 128, 128, split_rows(rng, 256, 8)))
    c.append(Case("tgmm --check", "tgmm", 48, 16, 24, split_rows(rng, 48, 3), existing=True, check=True))
    return c


def odd_count_cases(rng):
    """16-bit operands whose element counts are odd (each ends mid-way through a 32-bit word): lhs, rhs,
    out and existing_out, f16 and bf16, gmm and tgmm, on the 16-bit-storage path and on the packed path
    (VKGMM_DISABLE_16BIT_STORAGE=1). Padding to whole words is vkgmm's job, never the caller's."""
    c = []
    for path, env in (("", None), (", packed", {"VKGMM_DISABLE_16BIT_STORAGE": "1"})):
        # lhs [3, 259] with --input-dtype bf16: the shape first reported ("holds 1554 bytes, the plan needs 1556").
        c.append(Case("gmm odd counts bf16" + path, "gmm", 3, 259, 5, [1, 1, 1], input_dtype="bf16",
                      out_dtype="bf16", existing=True, check=True, env=env))
        c.append(Case("gmm odd counts f16" + path, "gmm", 3, 259, 5, [1, 1, 1], lhs_dtype=np.float16,
                      rhs_dtype=np.float16, out_dtype="f16", existing=True, transpose_rhs=True, env=env))
        c.append(Case("gmm odd lhs f16, f32 rhs and out" + path, "gmm", 5, 7, 4, split_rows(rng, 5, 2),
                      lhs_dtype=np.float16, env=env))
        c.append(Case("tgmm odd counts bf16" + path, "tgmm", 3, 259, 5, [1, 1, 1], input_dtype="bf16",
                      out_dtype="bf16", existing=True, env=env))
        c.append(Case("tgmm odd counts f16" + path, "tgmm", 3, 259, 5, [1, 1, 1], lhs_dtype=np.float16,
                      rhs_dtype=np.float16, out_dtype="f16", existing=True, check=True, env=env))
    return c


def jax_shape_cases(rng):
    """JAX tpu_gmm_test's GROUPED_MATMUL_TESTS shapes (m, k, n), for both ops, f32 and 16-bit."""
    c = []
    for (m, k, n) in [(128, 128, 128), (512, 2048, 256), (128, 8, 16)]:
        for g in (1, 8, 32):
            gs = split_rows(rng, m, g)
            c.append(Case("jax gmm %dx%dx%d G=%d" % (m, k, n, g), "gmm", m, k, n, gs, transpose_rhs=g == 8))
            c.append(Case("jax tgmm %dx%dx%d G=%d" % (m, k, n, g), "tgmm", m, k, n, gs))
        gs = split_rows(rng, m, 8)
        c.append(Case("jax gmm %dx%dx%d bf16 in, bf16 out" % (m, k, n), "gmm", m, k, n, gs, input_dtype="bf16",
                      out_dtype="bf16"))
        c.append(Case("jax gmm %dx%dx%d f16 in, f16 out" % (m, k, n), "gmm", m, k, n, gs,
                      lhs_dtype=np.float16, rhs_dtype=np.float16, out_dtype="f16"))
        c.append(Case("jax tgmm %dx%dx%d bf16 in, bf16 out" % (m, k, n), "tgmm", m, k, n, gs, input_dtype="bf16",
                      out_dtype="bf16"))
        c.append(Case("jax tgmm %dx%dx%d f16 in, f16 out" % (m, k, n), "tgmm", m, k, n, gs,
                      lhs_dtype=np.float16, rhs_dtype=np.float16, out_dtype="f16"))
    return c


def device_cases(rng):
    """--device-metadata (the group sizes in a device buffer): each case also runs without the flag, and
    the two output files must be equal byte for byte (the device path runs the host path's tiling)."""
    c = []
    for (m, k, n) in [(128, 128, 128), (512, 2048, 256), (128, 8, 16)]:
        for g in (1, 8, 32):
            gs = split_rows(rng, m, g)
            c.append(Case("device jax gmm %dx%dx%d G=%d" % (m, k, n, g), "gmm", m, k, n, gs, transpose_rhs=g == 8,
                          device=True))
            c.append(Case("device jax tgmm %dx%dx%d G=%d" % (m, k, n, g), "tgmm", m, k, n, gs, device=True))
    c.append(Case("device gmm group-offset + existing-out", "gmm", 80, 24, 40, split_rows(rng, 80, 5),
                  group_offset=1, g_local=3, existing=True, device=True))
    c.append(Case("device gmm empty groups, rows past sum, --check", "gmm", 96, 32, 32,
                  split_rows(rng, 70, 6, empty=(0, 3)), existing=True, check=True, device=True))
    c.append(Case("device gmm m = 0", "gmm", 0, 8, 8, [0, 0], device=True))
    c.append(Case("device gmm tiling 8,4,8, bf16", "gmm", 45, 19, 21, split_rows(rng, 45, 4, empty=(1,)),
                  tiling=(8, 4, 8), input_dtype="bf16", out_dtype="bf16", device=True))
    c.append(Case("device tgmm group-offset + num-actual-groups + existing-out", "tgmm", 80, 24, 40,
                  split_rows(rng, 80, 5), group_offset=1, num_actual_groups=2, existing=True, device=True))
    c.append(Case("device tgmm empty groups, rows past sum, --check", "tgmm", 90, 20, 28,
                  split_rows(rng, 70, 6, empty=(0, 3)), existing=True, check=True, device=True))
    c.append(Case("device gmm f16, packed", "gmm", 64, 36, 30, split_rows(rng, 64, 4), lhs_dtype=np.float16,
                  rhs_dtype=np.float16, out_dtype="f16", existing=True, transpose_rhs=True, device=True,
                  env={"VKGMM_DISABLE_16BIT_STORAGE": "1"}))
    c.append(Case("device tgmm bf16 odd counts, packed", "tgmm", 3, 259, 5, [1, 1, 1], input_dtype="bf16",
                  out_dtype="bf16", existing=True, check=True, device=True,
                  env={"VKGMM_DISABLE_16BIT_STORAGE": "1"}))
    return c


# --- running --------------------------------------------------------------------------------------

def run(vkgmm, args, env=None):
    try:
        full_env = dict(os.environ, **env) if env else None
        p = subprocess.run([vkgmm, "run"] + args, capture_output=True, text=True, timeout=TIMEOUT_S, env=full_env)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % TIMEOUT_S


def build_and_run(vkgmm, d, case, rng):
    """Writes the case's inputs, runs vkgmm, returns None on success or a reason for failure."""
    m, k, n, gs = case.m, case.k, case.n, case.gs
    routed = case.top_k is not None
    G = len(gs) if not routed else 0
    off = case.group_offset or 0
    if routed:
        lhs_shape = (m, case.top_k, k) if case.lhs_per_slot else (m, k)
    else:
        lhs_shape = (m, k) if case.op == "gmm" else (k, m)
    lhs = rng.uniform(-1, 1, lhs_shape).astype(case.lhs_dtype)
    if case.op == "gmm":
        g_local = case.g_local if case.g_local is not None else G - off
        rhs_shape = (g_local, n, k) if case.transpose_rhs else (g_local, k, n)
    else:
        rhs_shape = (m, n)
    rhs = rng.uniform(-1, 1, rhs_shape).astype(case.rhs_dtype)
    out_dtype = case.out_dtype or "f32"
    n_out = n_out_of(n, case.activation)
    if routed:
        out_shape = (m, n_out) if case.weights else (m, case.top_k, n_out)
    elif case.op == "gmm":
        out_shape = (m, n_out)
    else:
        out_shape = (case.num_actual_groups if case.num_actual_groups is not None else G - off, k, n)
    existing = rng.uniform(-1, 1, out_shape).astype(np.float32) if case.existing else None
    bias = rng.uniform(-1, 1, (g_local, n)).astype(np.float32) if case.bias else None
    ids = weights = None
    if routed:
        # Every kind of slot: -1, experts below and past the window (other shards), and local ones.
        hi = case.num_experts if case.num_experts is not None else off + g_local + 2
        ids = rng.integers(-1, hi, size=(m, case.top_k))
        weights = rng.uniform(0, 1, (m, case.top_k)).astype(np.float32) if case.weights else None

    paths = {f: os.path.join(d, f + ".npy")
             for f in ("lhs", "rhs", "gs", "existing", "out", "ids", "weights", "bias")}
    np.save(paths["lhs"], lhs)
    np.save(paths["rhs"], rhs)
    args = [case.op, "--lhs", paths["lhs"], "--rhs", paths["rhs"], "--out", paths["out"]]
    if routed:
        np.save(paths["ids"], ids.astype(case.ids_dtype))
        args += ["--ids", paths["ids"]]
    else:
        np.save(paths["gs"], gs.astype(case.gs_dtype))
        args += ["--group-sizes", paths["gs"]]
    if weights is not None:
        np.save(paths["weights"], weights)
        args += ["--weights", paths["weights"]]
    if case.num_experts is not None:
        args += ["--num-experts", str(case.num_experts)]
    if bias is not None:
        np.save(paths["bias"], bias)
        args += ["--bias", paths["bias"]]
    if case.activation:
        args += ["--activation", case.activation]
    if existing is not None:
        np.save(paths["existing"], existing)
        args += ["--existing-out", paths["existing"]]
    if case.transpose_rhs:
        args.append("--transpose-rhs")
    if case.group_offset is not None:
        args += ["--group-offset", str(case.group_offset)]
    if case.num_actual_groups is not None:
        args += ["--num-actual-groups", str(case.num_actual_groups)]
    if case.out_dtype:
        args += ["--out-dtype", case.out_dtype]
    if case.input_dtype:
        args += ["--input-dtype", case.input_dtype]
    if case.tiling:
        args += ["--tiling", ",".join(map(str, case.tiling))]
    if case.check:
        args.append("--check")

    host_out = None
    if case.device:  # the host path's file first, then the device path's in its place
        code, out, err = run(vkgmm, args, case.env)
        if code != 0 or err.strip():
            return "without --device-metadata: exit %s: %s" % (code, err.strip())
        host_out = os.path.join(d, "out_host.npy")
        os.rename(paths["out"], host_out)
        args.append("--device-metadata")
    code, out, err = run(vkgmm, args, case.env)
    if code != 0:
        return "exit %s: %s" % (code, err.strip())
    if err.strip():
        return "unexpected stderr: " + err.strip()
    if case.check and "max abs error" not in out:
        return "--check printed no max abs error: " + out.strip()
    if host_out is not None and open(host_out, "rb").read() != open(paths["out"], "rb").read():
        return "the --device-metadata output file differs from the host path's"

    # The model: inputs as the device sees them, float64 sums, rounded to the output type.
    L, lt = device_input(lhs, case.input_dtype)
    R, rt = device_input(rhs, case.input_dtype)
    E = round_to(out_dtype, existing) if existing is not None else None
    B = bias.astype(np.float64) if bias is not None else None  # f32 always: --input-dtype leaves it alone
    if routed:
        W = weights.astype(np.float64) if weights is not None else None
        want = ref_routed(L, R, ids, off, case.transpose_rhs, W, E, B, case.activation)
    elif case.op == "gmm":
        want = ref_gmm(L, R, gs, off, case.transpose_rhs, E, B, case.activation)
    else:
        want = ref_tgmm(L, R, gs, off, out_shape[0], E)
    want = round_to(out_dtype, want)

    got = np.load(paths["out"])
    expect_dtype = np.float16 if out_dtype == "f16" else np.float32
    if got.dtype != expect_dtype:
        return "output dtype %s, expected %s" % (got.dtype, np.dtype(expect_dtype))
    if got.shape != tuple(out_shape):
        return "output shape %s, expected %s" % (got.shape, tuple(out_shape))
    if out_dtype == "bf16" and not np.array_equal(bf16_round(got), got):
        return "bf16 output holds values that are not bf16"
    low = "f32" != lt or "f32" != rt or out_dtype != "f32"
    atol, rtol = (1e-3, 1e-2) if low else (1e-3, 1e-5)
    g64 = got.astype(np.float64)
    bad = ~(np.abs(g64 - want) <= atol + rtol * np.abs(want))
    bad |= (np.isinf(g64) | np.isinf(want)) & (g64 != want)  # inf's tolerance would take any value
    if bad.any():
        i = np.unravel_index(np.argmax(bad), bad.shape)
        return "%d of %d elements out of tolerance (atol %g rtol %g), max abs error %.3g; first at %s: " \
               "got %r, expected %r" % (bad.sum(), bad.size, atol, rtol, np.abs(g64 - want).max(), i,
                                        float(g64[i]), float(want[i]))
    return None


def error_cases(d):
    """(name, args, needle[, env]) where needle must appear in the error line. Inputs are written here."""
    rng = np.random.default_rng(7)
    p = lambda name: os.path.join(d, name)
    np.save(p("lhs.npy"), rng.uniform(-1, 1, (32, 16)).astype(np.float32))
    np.save(p("rhs.npy"), rng.uniform(-1, 1, (2, 16, 8)).astype(np.float32))
    np.save(p("rhs_badk.npy"), rng.uniform(-1, 1, (2, 12, 8)).astype(np.float32))
    np.save(p("gs.npy"), np.array([10, 22], np.int32))
    np.save(p("gs_big.npy"), np.array([20, 20], np.int32))
    np.save(p("gs_neg.npy"), np.array([-1, 20], np.int32))
    np.save(p("gs_i8_range.npy"), np.array([2**31, 0], np.int64))
    np.save(p("gs_f4.npy"), np.array([10, 22], np.float32))
    np.save(p("gs_2d.npy"), np.array([[10, 22]], np.int32))
    np.save(p("vec.npy"), np.zeros(16, np.float32))
    np.save(p("be.npy"), np.zeros((32, 16), ">f4"))
    np.save(p("f8.npy"), np.zeros((32, 16), np.float64))
    np.save(p("ex_bad.npy"), np.zeros((32, 9), np.float32))
    np.save(p("t_lhs.npy"), rng.uniform(-1, 1, (16, 32)).astype(np.float32))
    np.save(p("t_rhs.npy"), rng.uniform(-1, 1, (32, 8)).astype(np.float32))
    np.save(p("t_rhs_badm.npy"), rng.uniform(-1, 1, (30, 8)).astype(np.float32))
    with open(p("trunc.npy"), "wb") as f:
        f.write(open(p("lhs.npy"), "rb").read()[:-5])
    # Malformed files the reader must refuse (each also has a unit test in tests/test_npy.cpp).
    np.save(p("fortran.npy"), np.asfortranarray(rng.uniform(-1, 1, (32, 16)).astype(np.float32)))
    np.save(p("object.npy"), np.array([None] * 4, dtype=object), allow_pickle=True)
    np.save(p("ex_i4.npy"), np.zeros((32, 8), np.int32))
    good = open(p("lhs.npy"), "rb").read()
    with open(p("magic.npy"), "wb") as f:
        f.write(b"\x93NUMPZ" + good[6:])
    with open(p("absurd.npy"), "wb") as f:  # format 2.0 claiming a 4 GiB header
        f.write(b"\x93NUMPY\x02\x00\xff\xff\xff\xff" + good[10:])
    # Routing by ids and epilogues: T = 32 tokens, top_k = 2, rhs [2, 16, 8] (E_local = 2).
    np.save(p("ids.npy"), rng.integers(-1, 4, (32, 2)).astype(np.int32))
    np.save(p("ids_low.npy"), np.full((32, 2), -2, np.int32))
    np.save(p("ids_i8_range.npy"), np.full((32, 2), 2**31, np.int64))
    np.save(p("ids_f4.npy"), np.zeros((32, 2), np.float32))
    np.save(p("ids_1d.npy"), np.zeros(32, np.int32))
    np.save(p("ids_k0.npy"), np.zeros((32, 0), np.int32))
    np.save(p("ids_t31.npy"), np.zeros((31, 2), np.int32))
    np.save(p("ids_big.npy"), np.array([[0, 5]] * 32, np.int32))
    np.save(p("lhs_slot3.npy"), rng.uniform(-1, 1, (32, 3, 16)).astype(np.float32))
    np.save(p("lhs_slot.npy"), rng.uniform(-1, 1, (32, 2, 16)).astype(np.float32))
    np.save(p("w.npy"), rng.uniform(0, 1, (32, 2)).astype(np.float32))
    np.save(p("w_bad.npy"), rng.uniform(0, 1, (32, 3)).astype(np.float32))
    np.save(p("w_f2.npy"), rng.uniform(0, 1, (32, 2)).astype(np.float16))
    np.save(p("bias.npy"), np.zeros((2, 8), np.float32))
    np.save(p("bias_bad.npy"), np.zeros((2, 4), np.float32))
    np.save(p("bias_f2.npy"), np.zeros((2, 8), np.float16))
    np.save(p("rhs_odd.npy"), rng.uniform(-1, 1, (2, 16, 7)).astype(np.float32))
    np.save(p("ex_slot.npy"), np.zeros((32, 2, 8), np.float32))
    np.save(p("ex_tok.npy"), np.zeros((32, 8), np.float32))
    # Quantized and GGUF rhs (k = 16 in lhs.npy; 32 in lhs32.npy).
    np.save(p("lhs32.npy"), rng.uniform(-1, 1, (32, 32)).astype(np.float32))
    np.save(p("q8.npy"), np.zeros((2, 8, 34), np.uint8))      # q8_0 blocks: k = 32, n = 8, G_local = 2
    np.save(p("q8_ragged.npy"), np.zeros((2, 8, 35), np.uint8))
    np.save(p("q8_2d.npy"), np.zeros((8, 34), np.uint8))
    write_gguf(p("w.gguf"), [("f32", [16, 8, 2], "f32", bytes(16 * 8 * 2 * 4)),
                             ("q8", [32, 8, 2], "q8_0", bytes(2 * 8 * 34)),
                             ("iq2", [256, 8, 2], "iq2_xxs", bytes(2 * 8 * 66)),
                             ("vec", [32], "f32", bytes(128))])
    write_gguf(p("v2.gguf"), [("f32", [16, 8, 2], "f32", bytes(16 * 8 * 2 * 4))], version=2)
    with open(p("cut.gguf"), "wb") as f:
        f.write(open(p("w.gguf"), "rb").read()[:200])
    out = p("out.npy")
    base = ["--lhs", p("lhs.npy"), "--rhs", p("rhs.npy"), "--group-sizes", p("gs.npy"), "--out", out]
    routed = ["gmm", "--lhs", p("lhs.npy"), "--ids", p("ids.npy"), "--rhs", p("rhs.npy"), "--out", out]

    def routed_with(**repl):
        a = list(routed)
        for flag, val in repl.items():
            a[a.index("--" + flag.replace("_", "-")) + 1] = p(val)
        return a
    tbase = ["tgmm", "--lhs", p("t_lhs.npy"), "--rhs", p("t_rhs.npy"), "--group-sizes", p("gs.npy"), "--out", out]

    def gmm_with(**repl):
        a = ["gmm"] + list(base)
        for flag, val in repl.items():
            a[a.index("--" + flag.replace("_", "-")) + 1] = p(val)
        return a

    return out, [
        ("missing lhs file", gmm_with(lhs="nope.npy"), "--lhs"),
        ("lhs wrong rank", gmm_with(lhs="vec.npy"), "--lhs"),
        ("rhs wrong rank", gmm_with(rhs="lhs.npy"), "--rhs"),
        ("rhs k mismatch", gmm_with(rhs="rhs_badk.npy"), "--rhs"),
        ("sum(group_sizes) > m", gmm_with(group_sizes="gs_big.npy"), "group"),
        ("negative group size", gmm_with(group_sizes="gs_neg.npy"), "group"),
        ("int64 group size out of int32 range", gmm_with(group_sizes="gs_i8_range.npy"), "--group-sizes"),
        ("float group sizes", gmm_with(group_sizes="gs_f4.npy"), "--group-sizes"),
        ("group sizes rank 2", gmm_with(group_sizes="gs_2d.npy"), "--group-sizes"),
        ("big-endian lhs", gmm_with(lhs="be.npy"), "big-endian"),
        ("float64 lhs", gmm_with(lhs="f8.npy"), "--lhs"),
        ("truncated lhs", gmm_with(lhs="trunc.npy"), "truncated"),
        ("fortran-order lhs", gmm_with(lhs="fortran.npy"), "fortran_order"),
        ("object-dtype rhs", gmm_with(rhs="object.npy"), "object dtype"),
        ("bad magic lhs", gmm_with(lhs="magic.npy"), "bad magic"),
        ("absurd header length", gmm_with(lhs="absurd.npy"), "absurd"),
        ("existing-out int dtype", ["gmm"] + base + ["--existing-out", p("ex_i4.npy")], "--existing-out"),
        # Device faults (injected, see host/faults.hpp): exit 1, the VkResult named, no output.
        ("device lost", ["gmm"] + base, "VK_ERROR_DEVICE_LOST", {"VKGMM_INJECT_FAULT": "device_lost"}),
        ("submit fails", ["gmm"] + base, "VK_ERROR_OUT_OF_HOST_MEMORY", {"VKGMM_INJECT_FAULT": "submit"}),
        ("wait times out", tbase, "VK_TIMEOUT", {"VKGMM_INJECT_FAULT": "timeout"}),
        ("existing-out wrong shape", ["gmm"] + base + ["--existing-out", p("ex_bad.npy")], "--existing-out"),
        ("group-offset out of range", ["gmm"] + base + ["--group-offset", "1"], "offset"),
        ("negative group-offset", ["gmm"] + base + ["--group-offset", "-1"], "--group-offset"),
        ("tiling zero", ["gmm"] + base + ["--tiling", "0,8,8"], "tiling"),
        ("tiling malformed", ["gmm"] + base + ["--tiling", "8,8"], "--tiling"),
        ("bad out-dtype", ["gmm"] + base + ["--out-dtype", "f64"], "--out-dtype"),
        ("bad input-dtype", ["gmm"] + base + ["--input-dtype", "f16"], "--input-dtype"),
        ("unknown option", ["gmm"] + base + ["--frobnicate"], "--frobnicate"),
        ("missing --out", ["gmm"] + base[:-2], "--out"),
        ("out directory missing", ["gmm"] + base[:-1] + [p("nodir/out.npy")], "--out"),
        ("unknown operation", ["gemm"] + base, "gemm"),
        ("num-actual-groups on gmm", ["gmm"] + base + ["--num-actual-groups", "1"], "num-actual-groups"),
        ("tgmm m mismatch", [tbase[0]] + [p("t_rhs_badm.npy") if a == p("t_rhs.npy") else a for a in tbase[1:]],
         "--rhs"),
        ("tgmm num-actual-groups too large", tbase + ["--num-actual-groups", "3"], "groups"),
        ("tgmm existing-out wrong shape", tbase + ["--existing-out", p("ex_bad.npy")], "--existing-out"),
        ("tgmm sum(group_sizes) > m", [a if a != p("gs.npy") else p("gs_big.npy") for a in tbase], "group"),
        # --device-metadata: the sizes are still checked on the host, as without the flag.
        ("device-metadata with a value", ["gmm"] + base + ["--device-metadata=1"], "--device-metadata"),
        ("device-metadata given twice", ["gmm"] + base + ["--device-metadata"] * 2, "--device-metadata"),
        ("device-metadata, sum(group_sizes) > m", gmm_with(group_sizes="gs_big.npy") + ["--device-metadata"],
         "group"),
        ("device-metadata, negative group size", gmm_with(group_sizes="gs_neg.npy") + ["--device-metadata"],
         "group"),
        ("device-metadata, tgmm num-actual-groups too large",
         tbase + ["--num-actual-groups", "3", "--device-metadata"], "groups"),
        ("device-metadata, device lost", ["gmm"] + base + ["--device-metadata"], "VK_ERROR_DEVICE_LOST",
         {"VKGMM_INJECT_FAULT": "device_lost"}),
        # Routing by expert ids and epilogues (docs/contract.md, "The command line"): all refused on the host.
        ("ids with group-sizes", routed + ["--group-sizes", p("gs.npy")], "--ids"),
        ("neither ids nor group-sizes", ["gmm", "--lhs", p("lhs.npy"), "--rhs", p("rhs.npy"), "--out", out],
         "--group-sizes"),
        ("ids with tgmm", tbase + ["--ids", p("ids.npy")], "--ids"),
        ("weights with tgmm", tbase + ["--weights", p("w.npy")], "--weights"),
        ("num-experts with tgmm", tbase + ["--num-experts", "4"], "--num-experts"),
        ("bias with tgmm", tbase + ["--bias", p("bias.npy")], "--bias"),
        ("activation with tgmm", tbase + ["--activation", "swiglu"], "--activation"),
        ("weights without ids", ["gmm"] + base + ["--weights", p("w.npy")], "--weights"),
        ("num-experts without ids", ["gmm"] + base + ["--num-experts", "4"], "--num-experts"),
        ("device-metadata with ids", routed + ["--device-metadata"], "--device-metadata"),
        ("id below -1", routed_with(ids="ids_low.npy"), "--ids"),
        ("id >= num-experts", routed_with(ids="ids_big.npy") + ["--num-experts", "5"], "--ids"),
        ("int64 id out of int32 range", routed_with(ids="ids_i8_range.npy"), "--ids"),
        ("float ids", routed_with(ids="ids_f4.npy"), "--ids"),
        ("ids rank 1", routed_with(ids="ids_1d.npy"), "--ids"),
        ("ids top_k = 0", routed_with(ids="ids_k0.npy"), "--ids"),
        ("missing ids file", routed_with(ids="nope.npy"), "--ids"),
        ("lhs rows != T", routed_with(ids="ids_t31.npy"), "--lhs"),
        ("3-D lhs, top_k mismatch", routed_with(lhs="lhs_slot3.npy"), "--lhs"),
        ("3-D lhs without ids", gmm_with(lhs="lhs_slot.npy"), "--lhs"),
        ("routed rhs k mismatch", routed_with(rhs="rhs_badk.npy"), "--rhs"),
        ("num-experts below the window", routed + ["--group-offset", "3", "--num-experts", "4"], "--num-experts"),
        ("num-experts not a positive integer", routed + ["--num-experts", "0"], "--num-experts"),
        ("weights wrong shape", routed + ["--weights", p("w_bad.npy")], "--weights"),
        ("weights f16", routed + ["--weights", p("w_f2.npy")], "--weights"),
        ("bias wrong shape, routed", routed + ["--bias", p("bias_bad.npy")], "--bias"),
        ("bias wrong shape, group sizes", ["gmm"] + base + ["--bias", p("bias_bad.npy")], "--bias"),
        ("bias f16", ["gmm"] + base + ["--bias", p("bias_f2.npy")], "--bias"),
        ("swiglu odd n, group sizes", gmm_with(rhs="rhs_odd.npy") + ["--activation", "swiglu"], "--activation"),
        ("swiglu odd n, routed", routed_with(rhs="rhs_odd.npy") + ["--activation", "swiglu"], "--activation"),
        ("unknown activation", ["gmm"] + base + ["--activation", "gelu"], "--activation"),
        ("existing-out per-slot shape on a combined run", routed + ["--weights", p("w.npy"), "--existing-out",
                                                                     p("ex_slot.npy")], "--existing-out"),
        ("existing-out combined shape on a per-slot run", routed + ["--existing-out", p("ex_tok.npy")],
         "--existing-out"),
        # --rhs-format and --rhs FILE.gguf:TENSOR (docs/contract.md, "The command line").
        ("rhs-format unknown", gmm_with(rhs="q8.npy") + ["--rhs-format", "iq2_xxs"], "--rhs-format"),
        ("rhs-format a float type", gmm_with(rhs="q8.npy") + ["--rhs-format", "f32"], "--rhs-format"),
        ("rhs-format with tgmm", tbase + ["--rhs-format", "q8_0"], "--rhs-format"),
        ("rhs-format with an f32 npy", ["gmm"] + base + ["--rhs-format", "q8_0"], "--rhs"),
        ("rhs-format, last dim not whole blocks", gmm_with(rhs="q8_ragged.npy") + ["--rhs-format", "q8_0"], "--rhs"),
        ("rhs-format, rank 2", gmm_with(rhs="q8_2d.npy") + ["--rhs-format", "q8_0"], "--rhs"),
        ("rhs-format, k != lhs k", gmm_with(rhs="q8.npy") + ["--rhs-format", "q8_0"], "--rhs"),
        ("u1 rhs without rhs-format", gmm_with(lhs="lhs32.npy", rhs="q8.npy"), "--rhs-format"),
        ("gguf without a tensor name", gmm_with(rhs="w.gguf"), "--rhs"),
        ("gguf with an empty tensor name", ["gmm"] + [p("w.gguf") + ":" if a == p("rhs.npy") else a for a in base],
         "--rhs"),
        ("gguf tensor missing", ["gmm"] + [p("w.gguf") + ":nope" if a == p("rhs.npy") else a for a in base],
         "no tensor 'nope'"),
        ("gguf file missing", ["gmm"] + [p("none.gguf") + ":f32" if a == p("rhs.npy") else a for a in base], "--rhs"),
        ("gguf version 2", ["gmm"] + [p("v2.gguf") + ":f32" if a == p("rhs.npy") else a for a in base], "version 2"),
        ("gguf truncated", ["gmm"] + [p("cut.gguf") + ":f32" if a == p("rhs.npy") else a for a in base], "--rhs"),
        ("gguf tensor of rank 1", ["gmm"] + [p("w.gguf") + ":vec" if a == p("rhs.npy") else a for a in base], "--rhs"),
        ("gguf tensor of a type vkgmm does not run", ["gmm"] + [p("w.gguf") + ":iq2" if a == p("rhs.npy") else a
                                                              for a in base], "IQ2_XXS"),
        ("gguf rhs-format mismatch (q8_0 file)", ["gmm"] + [p("w.gguf") + ":q8" if a == p("rhs.npy") else a
                                                           for a in base] + ["--rhs-format", "q4_0"], "--rhs-format"),
        ("gguf rhs-format mismatch (f32 file)", ["gmm"] + [p("w.gguf") + ":f32" if a == p("rhs.npy") else a
                                                          for a in base] + ["--rhs-format", "q8_0"], "--rhs-format"),
        ("gguf quantized, k != lhs k", ["gmm"] + [p("w.gguf") + ":q8" if a == p("rhs.npy") else a for a in base],
         "--rhs"),
        ("existing-out of n columns with swiglu", ["gmm"] + base + ["--activation", "swiglu", "--existing-out",
                                                                    p("ex_tok.npy")], "--existing-out"),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("vkgmm")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--only", default="", help="run only cases whose name contains this")
    a = ap.parse_args()
    vkgmm = os.path.abspath(a.vkgmm)
    tmp = tempfile.mkdtemp(prefix="vkgmm_check_run_")
    passed = failed = 0

    def report(name, reason):
        nonlocal passed, failed
        if reason is None:
            passed += 1
            print("PASS  " + name, flush=True)
        else:
            failed += 1
            print("FAIL  %s: %s" % (name, reason), flush=True)

    try:
        rng = np.random.default_rng(1234)
        for i, case in enumerate(gmm_cases(rng) + epilogue_cases(rng) + routed_cases(rng) + tgmm_cases(rng) +
                                 odd_count_cases(rng) + jax_shape_cases(rng) + device_cases(rng)):
            if a.only not in case.name:
                continue
            d = os.path.join(tmp, "case%02d" % i)
            os.makedirs(d)
            try:
                reason = build_and_run(vkgmm, d, case, rng)
            except Exception as e:  # a broken output file is a failure of the case, not of the script
                reason = "%s: %s" % (type(e).__name__, e)
            report(case.name, reason)

        if a.only in "gmm GGUF f32 rhs" or "GGUF" in a.only:
            d = os.path.join(tmp, "gguf")
            os.makedirs(d)
            for name, reason in gguf_cases(vkgmm, d, rng):
                if a.only in name:
                    report(name, reason)

        if not a.only or "edge" in a.only:  # --out, --check's tolerance, bounds, the commands' arguments
            d = os.path.join(tmp, "edges")
            os.makedirs(d)
            for name, reason in cli_edges.edge_cases(vkgmm, d, rng, write_gguf, a.only):
                report(name, reason)

        d = os.path.join(tmp, "errors")
        os.makedirs(d)
        out, cases = error_cases(d)
        for name, args, needle, *env in cases:
            if a.only not in "error: " + name:
                continue
            code, stdout, err = run(vkgmm, args, env[0] if env else None)
            lines = err.splitlines()
            reason = None
            if code not in (1, 2):
                reason = "exit status %s, expected 1 or 2" % code
            elif len(lines) != 1:
                reason = "%d stderr lines, expected 1: %r" % (len(lines), err)
            elif not lines[0].startswith("vkgmm: error: "):
                reason = "stderr line does not start with 'vkgmm: error: ': " + lines[0]
            elif needle.lower() not in lines[0].lower():
                reason = "error does not mention %r: %s" % (needle, lines[0])
            elif os.path.exists(out) or os.path.exists(os.path.join(d, "nodir")):
                reason = "an output file was left behind"
            elif any(f.startswith(".out.npy") for f in os.listdir(d)):
                reason = "a temporary output file was left behind"
            report("error: " + name, reason)

        if a.only in "info --json":
            # A small cache keeps info's memory probes short: their sizes are bench_probes' to check.
            p = subprocess.run([vkgmm, "info", "--json"], capture_output=True, text=True, timeout=TIMEOUT_S,
                               env=dict(os.environ, VKGMM_CACHE_BYTES=str(8 << 20)))
            code, stdout, err = p.returncode, p.stdout, p.stderr
            reason = None
            try:
                info = json.loads(stdout)
                for key in ["name", "driver", "type", "vendor_id", "device_id", "architecture", "subgroup_size",
                            "max_storage_buffer_range", "push_descriptor",
                            "storage_buffer_16bit", "texel_loads_32bit", "texel_loads_16bit",
                            "max_texel_buffer_elements", "matrix_units", "matrix_shapes"]:
                    if key not in info:
                        reason = "no %r in %r" % (key, sorted(info))
                # The matrix units in use are null or one of the shapes listed, of f16 inputs and f32 sums.
                units, shapes = info.get("matrix_units"), info.get("matrix_shapes")
                if reason is None and not isinstance(shapes, list):
                    reason = "matrix_shapes is not a list: %r" % (shapes,)
                elif reason is None and units is not None:
                    shape = "%dx%dx%d f16*f16+f32->f32 subgroup" % (units["m"], units["n"], units["k"])
                    api = "KHR" if units["extension"] == "VK_KHR_cooperative_matrix" else "NV"
                    if api + " " + shape not in shapes:
                        reason = "matrix units %r are not among the shapes listed %r" % (units, shapes)
                    if reason is None and not isinstance(units.get("automatic"), bool):
                        reason = "matrix units' automatic is not a bool: %r" % (units,)
                    sg = units.get("subgroup_size", 0)
                    if reason is None and (sg <= 0 or sg & (sg - 1)):
                        reason = "matrix units' subgroup size %r is not a power of two" % (sg,)
                # A CPU driver is the "cpu" class; a GPU never is.
                if reason is None and (info["type"] == "cpu") != (info["architecture"] == "cpu"):
                    reason = "type %r with architecture %r" % (info["type"], info["architecture"])
                # The texel formats are mandatory in Vulkan: every device reads inputs through them.
                if reason is None and not (info["texel_loads_32bit"] is True and info["texel_loads_16bit"] is True):
                    reason = "texel loads not reported: %r %r" % (info["texel_loads_32bit"], info["texel_loads_16bit"])
            except (ValueError, KeyError) as e:
                reason = "exit %s, not the JSON expected (%s): %r" % (code, e, stdout[:200])
            if reason is None and code != 0:
                reason = "exit status %s: %s" % (code, err)
            report("info --json", reason)

        if a.only in "run --help":
            code, stdout, err = run(vkgmm, ["--help"])
            ok = code == 0 and "usage" in stdout and not err and all(
                f in stdout for f in ("--ids", "--weights", "--num-experts", "--bias", "--activation"))
            report("run --help", None if ok else
                   "exit %s, stdout %r, stderr %r" % (code, stdout[:80], err))
    finally:
        if a.keep:
            print("inputs kept in " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
