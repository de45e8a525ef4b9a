"""Routing by expert ids (per slot and combined), the bias and SwiGLU epilogues, and block-format weights
(vkgmm.quantize, a GGUF file) against numpy references."""

import struct

import numpy as np
import pytest

import vkgmm
from conftest import assert_close, epilogue, random_group_sizes, ref_gmm, ref_ids


@pytest.mark.parametrize("combine", [False, True])
@pytest.mark.parametrize("per_slot_lhs", [False, True])
def test_ids_routing(ctx, rng, combine, per_slot_lhs):
    T, top_k, E, k, n = 24, 2, 6, 64, 32
    lhs = rng.standard_normal((T, top_k, k) if per_slot_lhs else (T, k)).astype(np.float32)
    w = rng.standard_normal((E, k, n)).astype(np.float32)
    ids = rng.integers(-1, E, (T, top_k))
    weights = rng.random((T, top_k)).astype(np.float32) if combine else None
    out = vkgmm.gmm_ids(lhs, w, ids, weights, num_experts=E)
    assert out.shape == ((T, n) if combine else (T, top_k, n))
    assert_close(out, ref_ids(lhs, w, ids, weights), k)


def test_ids_sharded_experts_with_bias_and_swiglu(ctx, rng):
    """Two shards of the experts accumulate through existing_out; bias and SwiGLU fused."""
    T, top_k, E, k, n = 16, 3, 6, 32, 48
    lhs = rng.standard_normal((T, k)).astype(np.float32)
    w = rng.standard_normal((E, k, n)).astype(np.float32)
    bias = rng.standard_normal((E, n)).astype(np.float32)
    ids = rng.integers(0, E, (T, top_k))
    weights = rng.random((T, top_k)).astype(np.float32)
    out = None
    for off in (0, 3):
        out = vkgmm.gmm_ids(lhs, w[off:off + 3], ids, weights, group_offset=off, num_experts=E,
                            existing_out=out, bias=bias[off:off + 3], activation="swiglu")
    assert out.shape == (T, n // 2)
    assert_close(out, ref_ids(lhs, w, ids, weights, bias=bias, activation="swiglu"), k)


@pytest.mark.parametrize("activation", ["swiglu", "swiglu_oai", "geglu"])
def test_group_sizes_with_bias_and_a_gated_activation(ctx, rng, activation):
    m, k, n = 64, 32, 16
    lhs, w = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((3, k, n)).astype(np.float32)
    bias = rng.standard_normal((3, n)).astype(np.float32)
    gs = random_group_sizes(rng, m, 3)
    out = vkgmm.gmm(lhs, w, gs, bias=bias, activation=activation)
    starts = np.concatenate([[0], np.cumsum(gs)])
    want = np.zeros((m, n // 2))
    for g in range(3):
        want[starts[g]:starts[g + 1]] = epilogue(lhs[starts[g]:starts[g + 1]].astype(np.float64) @ w[g], bias[g], activation)
    assert_close(out, want, k)


@pytest.mark.parametrize("fmt", vkgmm.BLOCK_FORMATS)
def test_quantized_weights(ctx, rng, fmt):
    m, n, E = 32, 32, 3
    k = 256 if fmt.endswith("_K") or fmt == "iq4_xs" else 64  # one super-block, or two blocks of 32
    w = rng.standard_normal((E, n, k)).astype(np.float32)
    q = vkgmm.quantize(w, fmt)
    assert q.dtype == fmt and q.shape == (E, n, k)
    values = vkgmm.dequantize(q)  # exactly what the kernel reads
    # A quantization of w, not of something else: within about a step of the format's 2 to 8 bits.
    assert np.abs(values - w).max() < {"q2_K": 2.0, "q3_K": 1.0}.get(fmt, 0.6)
    lhs = rng.standard_normal((m, k)).astype(np.float32)
    gs = random_group_sizes(rng, m, E)
    assert_close(vkgmm.gmm(lhs, q, gs), ref_gmm(lhs, values, gs, transpose_rhs=True), k)
    ids = rng.integers(-1, E, (8, 2))
    assert_close(vkgmm.gmm_ids(lhs[:8], q, ids), ref_ids(lhs[:8], values.transpose(0, 2, 1), ids), k)


def write_gguf(path, tensors):
    """A GGUF v3 file (no key-values, 32-byte alignment) of (name, ggml type, dims ne, bytes) tensors."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 0)
    infos, data = b"", b""
    for name, ggml_type, ne, raw in tensors:
        data += b"\0" * (-len(data) % 32)
        infos += struct.pack("<Q", len(name)) + name.encode() + struct.pack("<I", len(ne))
        infos += struct.pack(f"<{len(ne)}Q", *ne) + struct.pack("<IQ", ggml_type, len(data))
        data += raw
    header = head + infos
    path.write_bytes(header + b"\0" * (-len(header) % 32) + data)


def test_read_gguf(ctx, rng, tmp_path):
    E, n, k, m = 2, 16, 32, 24
    w = rng.standard_normal((E, n, k)).astype(np.float32)
    blocks = vkgmm.quantize(w, "q8_0").numpy()
    path = tmp_path / "experts.gguf"
    write_gguf(path, [("blk.0.ffn_up_exps.weight", 8, [k, n, E], blocks.tobytes()),
                      ("blk.0.ffn_gate_exps.weight", 0, [k, n, E], w.tobytes())])
    q = vkgmm.read_gguf(path, "blk.0.ffn_up_exps.weight")
    assert q.dtype == "q8_0" and q.shape == (E, n, k)
    np.testing.assert_array_equal(q.numpy(), blocks)
    f = vkgmm.read_gguf(path, "blk.0.ffn_gate_exps.weight")
    assert f.dtype == "f32" and f.shape == (E, n, k)
    lhs = rng.standard_normal((m, k)).astype(np.float32)
    gs = random_group_sizes(rng, m, E)
    assert_close(vkgmm.gmm(lhs, q, gs), ref_gmm(lhs, vkgmm.dequantize(q), gs, transpose_rhs=True), k)
    assert_close(vkgmm.gmm(lhs, f, gs, transpose_rhs=True), ref_gmm(lhs, w, gs, transpose_rhs=True), k)
    with pytest.raises(ValueError, match="no_such_tensor"):
        vkgmm.read_gguf(path, "no_such_tensor")
    (tmp_path / "bad.gguf").write_bytes(b"GGUF\x02\0\0\0")
    with pytest.raises(ValueError, match="bad.gguf"):
        vkgmm.read_gguf(tmp_path / "bad.gguf", "x")


def test_block_format_names_are_the_librarys(ctx):
    assert vkgmm.BLOCK_FORMATS == ("q8_0", "q4_0", "q4_K", "q6_K", "mxfp4", "q4_1", "q5_0", "q5_1", "iq4_nl", "q5_K", "iq4_xs", "q2_K", "q3_K")
    w = np.zeros((1, 2, 256), np.float32)
    for fmt in vkgmm.BLOCK_FORMATS:
        # Any case, the canonical name back.
        assert vkgmm.quantize(w, fmt.upper()).dtype == fmt
    with pytest.raises(vkgmm.ContractError, match="one of q8_0, q4_0, q4_K, q6_K, mxfp4, q4_1, q5_0, q5_1, iq4_nl, q5_K, iq4_xs, q2_K, q3_K"):
        vkgmm.quantize(w, "iq2_xxs")
