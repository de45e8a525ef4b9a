"""Every error as a Python exception: ContractError (a ValueError) carrying vkgmm's message naming the
argument, before any GPU work, the context usable afterwards; DeviceError (a RuntimeError) for device
failures; exceptions raised by a tiling callable reach the caller as they are."""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import vkgmm
from conftest import ref_gmm

f32 = np.float32
LHS = np.ones((16, 8), f32)
RHS = np.ones((2, 8, 4), f32)
GS = [8, 8]


def refused(match, fn, *args, **kwargs):
    with pytest.raises(ValueError, match=match) as e:
        fn(*args, **kwargs)
    assert isinstance(e.value, vkgmm.ContractError) and e.value.status == "invalid_argument"


GMM_CASES = [
    ("lhs: expected rank 2", dict(lhs=np.ones((16,), f32))),
    ("rhs: expected rank 3", dict(rhs=np.ones((8, 4), f32))),
    ("rhs: k = 9", dict(rhs=np.ones((2, 9, 4), f32))),
    ("group_sizes.*negative|negative.*group_sizes", dict(group_sizes=[20, -4])),
    (r"sum\(group_sizes\) = 17 exceeds m = 16", dict(group_sizes=[9, 8])),
    ("group_sizes: expected integers", dict(group_sizes=[8.0, 8.0])),
    ("group_sizes: expected rank 1", dict(group_sizes=[[8, 8]])),
    ("group_offset", dict(group_offset=1)),
    ("group_offset", dict(group_offset=-1)),
    ("existing_out", dict(existing_out=np.ones((16, 5), f32))),
    ("existing_out", dict(existing_out=np.ones((16, 4), np.float16))),
    ("tiling", dict(tiling=(0, 8, 8))),
    ("tiling", dict(tiling=(8, 8))),
    ("tiling", dict(tiling="auto")),
    (r"tiling: expected a tuple \(tm, tk, tn\) of ints, got \{", dict(tiling={8, 16, 32})),  # no order
    ("tiling: expected a tuple", dict(tiling=b"\x08\x08\x08")),
    ("tiling: expected a tuple", dict(tiling=(n for n in (8, 8, 8)))),
    ("tiling: the callable's result", dict(tiling=lambda m, k, n: {8, 16, 32})),
    (r"tiling.*\(16, 8, 4\)", dict(tiling=lambda m, k, n: None)),
    ("tiling: the callable's result", dict(tiling=lambda m, k, n: (8, 8))),
    ("preferred_element_type: int32", dict(preferred_element_type=np.int32)),
    ("preferred_element_type: None", dict(preferred_element_type=None)),
    ("lhs: uint8 data holds a block format", dict(lhs=np.ones((16, 8), np.uint8))),
    ("lhs: int64 data", dict(lhs=np.ones((16, 8), np.int64))),
    ("lhs: uint16 data needs dtype='bf16'", dict(lhs=np.ones((16, 8), np.uint16))),
    ("activation", dict(activation="gelu")),
    ("swiglu.*odd|odd.*swiglu|even", dict(rhs=np.ones((2, 8, 5), f32), activation="swiglu")),
    ("bias", dict(bias=np.ones((2, 3), f32))),
]


@pytest.mark.parametrize("match,change", GMM_CASES, ids=[c[0][:30] for c in GMM_CASES])
def test_gmm_errors(ctx, match, change):
    args = dict(lhs=LHS, rhs=RHS, group_sizes=GS)
    args.update(change)
    refused(match, vkgmm.gmm, **args)
    # nothing broke: the context runs the next call
    np.testing.assert_allclose(vkgmm.gmm(LHS, RHS, GS), ref_gmm(LHS, RHS, GS))


@pytest.mark.parametrize("match,change", [
    ("lhs: expected rank 2", dict(lhs=np.ones((8, 16, 1), f32))),
    ("rhs: m = 15", dict(rhs=np.ones((15, 4), f32))),
    ("num_actual_groups", dict(num_actual_groups=3)),
    (r"num_actual_groups: -1 must be >= 1 \(None: G - group_offset\)", dict(num_actual_groups=-1)),
    (r"num_actual_groups: 0 must be >= 1", dict(num_actual_groups=0)),
    ("group_offset", dict(group_offset=3)),
    ("existing_out", dict(existing_out=np.ones((1, 8, 4), f32))),
])
def test_tgmm_errors(ctx, match, change):
    args = dict(lhs=np.ones((8, 16), f32), rhs=np.ones((16, 4), f32), group_sizes=GS)
    args.update(change)
    refused(match, vkgmm.tgmm, **args)


def test_backward_errors(ctx):
    refused(r"d_out: expected shape \(16, 4\)", vkgmm.gmm_backward, LHS, RHS, GS, np.ones((16, 5), f32))
    refused("sum", vkgmm.gmm_backward, LHS, RHS, [20, 0], np.ones((16, 4), f32))
    # With a gated activation d_out has out's n / 2 columns; the routed vjp checks it before its forward runs.
    refused(r"d_out: expected shape \(16, 2\)", vkgmm.gmm_backward, LHS, RHS, GS, np.ones((16, 4), f32),
            activation="swiglu")
    ids = np.zeros((16, 1), np.int32)
    refused(r"d_out: expected shape \(16, 1, 4\)", vkgmm.gmm_ids_vjp, LHS, RHS, ids, np.ones((16, 4), f32))
    refused(r"bias: the plan was made without bias", vkgmm.GmmBackwardPlan(LHS, RHS, GS), LHS, RHS,
            np.ones((16, 4), f32), bias=np.ones((2, 4), f32))


def test_backward_with_frozen_weights_checks_the_lhs_it_does_not_read(ctx, rng):
    w = rng.standard_normal((2, 4, 32)).astype(f32)
    q, lhs, d_out = vkgmm.quantize(w, "q8_0"), np.ones((3, 32), f32), rng.standard_normal((3, 4)).astype(f32)
    plan = vkgmm.GmmBackwardPlan(lhs, q, [1, 2])
    refused(r"lhs: expected shape \(3, 32\), got \(\)", plan, "garbage", q, d_out)
    refused(r"lhs: expected shape \(3, 32\), got \(32, 3\)", plan, lhs.T.copy(), q, d_out)
    refused("lhs: int64 data", plan, np.ones((3, 32), np.int64), q, d_out)
    refused("lhs: the plan takes f32, got a f16 Array", plan, vkgmm.Array(lhs.astype(np.float16)), q, d_out)
    d_lhs, d_rhs = plan(lhs, q, d_out)
    assert d_rhs is None  # d_lhs = d_out @ w[g] per group, w [G, n, k] as dequantized
    np.testing.assert_allclose(d_lhs, ref_gmm(d_out, vkgmm.dequantize(q), [1, 2]), rtol=1e-5, atol=1e-5)


def test_routing_errors(ctx):
    lhs, w = np.ones((4, 8), f32), np.ones((3, 8, 4), f32)
    ids = np.zeros((4, 2), np.int32)
    refused("ids: -2 is below -1", vkgmm.gmm_ids, lhs, w, np.full((4, 2), -2))
    refused("ids: 3 is not below num_experts = 3", vkgmm.gmm_ids, lhs, w, np.full((4, 2), 3), num_experts=3)
    refused("ids: expected rank 2", vkgmm.gmm_ids, lhs, w, np.zeros(4, np.int32))
    refused("ids: expected integers", vkgmm.gmm_ids, lhs, w, np.zeros((4, 2)))
    refused("lhs: shape", vkgmm.gmm_ids, np.ones((5, 8), f32), w, ids)
    refused("num_experts", vkgmm.gmm_ids, lhs, w, ids, num_experts=2)
    refused("weights", vkgmm.gmm_ids, lhs, w, ids, np.ones((4, 3), f32))
    plan = vkgmm.IdsGmmPlan(lhs, w, ids)
    refused(r"ids: expected shape \(4, 2\)", plan, lhs, w, np.zeros((4, 3), np.int32))


def test_array_and_plan_errors(ctx):
    refused("float16 data cannot hold bf16", vkgmm.Array, np.ones(4, np.float16), "bf16")
    refused("Array: data: unknown type 'f64'", vkgmm.Array, np.ones(4, f32), "f64")
    refused("needs shape", vkgmm.Array, np.zeros(34, np.uint8), "q8_0")
    refused("negative dimension", vkgmm.Array.empty, (4, -1))
    refused("more elements than any device", vkgmm.Array.empty, (2**32, 2**32))
    refused("more elements than any device", vkgmm.Array.empty, (2**62,))  # its bytes would wrap to 0
    refused("more elements than any device", vkgmm.Array.empty, (2**31, 2**31))
    refused("holds 68", vkgmm.Array, np.zeros(34, np.uint8), "q8_0", shape=(1, 2, 32))
    # Rows of whole blocks, not only a total of them.
    refused(r"Array: shape \(2, 2, 16\): k = 16 \(the last dimension\) is not a multiple of q8_0's block of 32",
            vkgmm.Array, np.zeros(68, np.uint8), "q8_0", shape=(2, 2, 16))
    refused(r"Array: shape \(2, 3\): k = 3 \(the last dimension\)", vkgmm.Array.empty, [2, 3], "q8_0")
    refused("quantize: w: complex64 data", vkgmm.quantize, np.ones((2, 32), np.complex64), "q8_0")
    refused(r"num_actual_groups: -1 must be >= 1", vkgmm.TgmmPlan, LHS.T, np.ones((16, 4), f32), GS,
            num_actual_groups=-1)
    refused("Array.upload: data", vkgmm.Array(np.ones(4, f32)).upload, np.ones(5, f32))
    refused(r"Array.upload: data: shape \(2, 3\) where the Array's is \(3, 2\)",
            vkgmm.Array(np.ones((3, 2), f32)).upload, np.ones((2, 3), f32))
    refused("not a multiple", vkgmm.quantize, np.ones((2, 4, 30), f32), "q8_0")
    # A value that is not finite, or float64 past float32's range, named at its index in w.
    w = np.ones((2, 4, 256), f32)
    w[1, 2, 5] = -np.inf
    refused(r"quantize: w\[1, 2, 5\] = -inf is not finite \(q4_K", vkgmm.quantize, w, "q4_K")
    w = np.ones((2, 4, 32))
    w[1, 3, 7] = 1e39
    refused(r"quantize: w\[1, 3, 7\] = 1e\+39 is past float32's range", vkgmm.quantize, w, "q8_0")
    # The format's and the shape's rules come first.
    refused("block format", vkgmm.quantize, w, "f16")
    refused("not a multiple", vkgmm.quantize, w[:, :, :30], "q8_0")
    refused("block format", vkgmm.quantize, np.ones((2, 4, 32), f32), "f16")
    plan = vkgmm.GmmPlan(LHS, RHS, GS)
    refused("lhs: the plan takes f32", plan, vkgmm.Array(LHS.astype(np.float16)), RHS)
    refused(r"lhs: expected shape \(16, 8\), got \(17, 8\)", plan, np.ones((17, 8), f32), RHS)
    # Which operands a plan takes is the library's operand table's rule, with its messages in Python's names.
    refused("gmm: existing_out: an array was given but the plan was made with existing_out=False", plan, LHS, RHS,
            np.ones((16, 4), f32))
    refused("gmm: bias: an array was given but the plan was made without bias=True", plan, LHS, RHS,
            bias=np.ones((2, 4), f32))
    refused("gmm: existing_out: the plan was made with existing_out=True but none was given",
            vkgmm.GmmPlan(LHS, RHS, GS, existing_out=True), LHS, RHS)
    refused("gmm: bias: the plan was made with bias=True but none was given",
            vkgmm.GmmPlan(LHS, RHS, GS, bias=True), LHS, RHS)
    refused("tgmm: existing_out: an array was given but the plan was made with existing_out=False",
            vkgmm.TgmmPlan(LHS.T, np.ones((16, 4), f32), GS), LHS.T, np.ones((16, 4), f32), np.ones((2, 8, 4), f32))
    refused("out: expected a f32 Array of shape", plan, LHS, RHS, out=vkgmm.Array.empty((16, 5)))
    refused("out: expected a vkgmm.Array to write into", plan, LHS, RHS, out=np.empty((16, 4), f32))
    refused("weights: expected a block-format vkgmm.Array", vkgmm.dequantize, np.zeros((1, 4, 34), np.uint8))
    refused("weights: expected a block-format vkgmm.Array", vkgmm.dequantize, vkgmm.Array(LHS))
    refused("format: unknown type 'q9_0'", vkgmm.quantize, np.ones((2, 4, 32), f32), "q9_0")
    other = vkgmm.Context(validate=True)
    refused("another Context", plan, vkgmm.Array(LHS, context=other), RHS)
    out_elsewhere = vkgmm.Array.empty((16, 4), context=other)
    refused("out: the Array lives on another Context", plan, LHS, RHS, out=out_elsewhere)
    refused("out: the Array lives on another Context", vkgmm.gmm_ids, LHS, RHS, np.zeros((16, 1), np.int32),
            out=vkgmm.Array.empty((16, 1, 4), context=other))


# Messages the C++ core writes in its own names (ContextOptions::..., Routing::combine, "a view", ...),
# each as a Python caller meets it: in the module's keyword arguments.
CPP_NAMES = re.compile(r"::|ContextOptions|Routing|Epilogue|num_rhs_groups|out_type|\bview\b|the problem|"
                       r"submit_and_wait|create_buffer|device_group_sizes")


def test_messages_name_python_arguments(ctx):
    ones = lambda *s: np.ones(s, f32)
    ids = np.array([[0, 1], [1, 0], [0, 0]], np.int32)
    cases = [
        (r"^timeout_s: 0\.0+ must be a positive number", lambda: vkgmm.Context(timeout_s=0)),
        (r"^device \(Context's device, \$VKGMM_DEVICE\): no device name contains 'nosuch'",
         lambda: vkgmm.Context(device="nosuch")),
        (r"^gmm: rhs\.shape\[0\] = 3 must be in \[1, 2\]", lambda: vkgmm.gmm(ones(4, 8), ones(3, 8, 4), [2, 2])),
        (r"^preferred_element_type: q8_0 is a block format",
         lambda: vkgmm.gmm(ones(4, 8), ones(2, 8, 4), [2, 2], preferred_element_type="q8_0")),
        (r"^d_out: q8_0 is a block format", lambda: vkgmm.GmmBackwardPlan(ones(4, 8), ones(2, 8, 4), [2, 2], "q8_0")),
        (r"^gmm: num_experts = 1 is smaller than group_offset \+ E_local = 2",
         lambda: vkgmm.gmm_ids(ones(3, 8), ones(2, 8, 4), ids, num_experts=1)),
        (r"^gmm: group_offset = 2147483648 must be below 2\^31",
         lambda: vkgmm.gmm_ids(ones(3, 8), ones(2, 8, 4), ids, group_offset=2**31)),
        (r"^gmm: weights: an array was given but the plan was made with combine=False",
         lambda: vkgmm.IdsGmmPlan(ones(3, 8), ones(2, 8, 4), ids)(ones(3, 8), ones(2, 8, 4), ids, ones(3, 2))),
        (r"^gmm: weights: the plan was made with combine=True but none was given",
         lambda: vkgmm.IdsGmmPlan(ones(3, 8), ones(2, 8, 4), ids, combine=True)(ones(3, 8), ones(2, 8, 4), ids)),
    ]
    for pattern, call in cases:
        with pytest.raises(vkgmm.ContractError) as e:
            call()
        message = str(e.value)
        assert re.search(pattern, message), message
        assert not CPP_NAMES.search(message), message
    with pytest.raises(TypeError, match=r"^activation: expected None or a str, got int"):
        vkgmm.gmm(ones(4, 8), ones(2, 8, 4), [2, 2], activation=5)
    with pytest.raises(TypeError, match=r"^activation: expected None or a str, got int"):
        vkgmm.moe_layer(ones(3, 8), ones(8, 2), ones(2, 8, 8), ones(2, 4, 8), top_k=1, activation=5)


def test_context_must_be_a_context(ctx):
    calls = [lambda: vkgmm.Array.empty([2], context="x"), lambda: vkgmm.Array(np.ones(2, f32), context=1),
             lambda: vkgmm.gmm(LHS, RHS, GS, context="x"), lambda: vkgmm.set_default_context("x")]
    for call in calls:
        with pytest.raises(TypeError, match=r"context: expected a vkgmm.Context or None, got (str|int)"):
            call()
    assert vkgmm.default_context() is ctx


def test_tiling_callable_exception_propagates(ctx):
    def broken(m, k, n):
        raise ZeroDivisionError("from the lookup")

    with pytest.raises(ZeroDivisionError, match="from the lookup"):
        vkgmm.gmm(LHS, RHS, GS, tiling=broken)
    np.testing.assert_allclose(vkgmm.gmm(LHS, RHS, GS), ref_gmm(LHS, RHS, GS))


@pytest.mark.parametrize("fault,status", [("device_lost", "device_lost"), ("submit", "device_lost|vulkan_error|out_of_memory"),
                                          ("timeout", "device_lost")])
def test_device_errors_are_runtime_errors(fault, status):
    """An injected fault (vkgmm's test switch, read when a Context is made: a process of its own) is a
    DeviceError, a RuntimeError naming the VkResult, in Python's names."""
    code = textwrap.dedent(f"""
        import re, numpy as np, vkgmm
        try:
            vkgmm.gmm(np.ones((16, 8), np.float32), np.ones((2, 8, 4), np.float32), [8, 8])
        except RuntimeError as e:
            assert isinstance(e, vkgmm.DeviceError) and not isinstance(e, ValueError), type(e)
            assert re.fullmatch({status!r}, e.status), e.status
            assert "VK_" in str(e), str(e)
            assert not re.search({CPP_NAMES.pattern!r}, str(e)), str(e)
            print("refused:", e)
        else:
            raise SystemExit("no error")
    """)
    env = dict(os.environ, VKGMM_INJECT_FAULT=fault)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "refused:" in r.stdout


def test_operands_of_another_shape_with_as_many_bytes_are_refused(ctx):
    """The library sees a buffer's bytes: a transposed or reshaped operand of the same size would be read as
    the planned shape. Each is refused naming the operand and both shapes."""
    plan = vkgmm.GmmPlan(LHS, RHS, GS, existing_out=True, bias=True)
    ok = dict(existing_out=np.zeros((16, 4), f32), bias=np.zeros((2, 4), f32))
    refused(r"lhs: expected shape \(16, 8\), got \(8, 16\)", plan, LHS.reshape(8, 16), RHS, **ok)
    refused(r"rhs: expected shape \(2, 8, 4\), got \(2, 4, 8\)", plan, LHS, RHS.reshape(2, 4, 8), **ok)
    refused(r"existing_out: expected shape \(16, 4\), got \(4, 16\)", plan, LHS, RHS,
            np.zeros((4, 16), f32), bias=ok["bias"])
    refused(r"bias: expected shape \(2, 4\), got \(4, 2\)", plan, LHS, RHS, ok["existing_out"],
            bias=np.zeros((4, 2), f32))
    refused(r"existing_out: expected shape \(2, 8, 4\), got \(2, 4, 8\)", vkgmm.tgmm, LHS.T, np.ones((16, 4), f32),
            GS, existing_out=np.zeros((2, 4, 8), f32))
    lhs, w, ids = np.ones((4, 8), f32), np.ones((3, 8, 4), f32), np.zeros((4, 2), np.int32)
    refused(r"weights: expected shape \(4, 2\), got \(2, 4\)", vkgmm.gmm_ids, lhs, w, ids, np.ones((2, 4), f32))
    refused(r"weights: expected shape \(4, 2\), got \(2, 4\)", vkgmm.top_k_backward, np.zeros((4, 3), f32), ids,
            np.ones((2, 4), f32), np.ones((4, 2), f32))


def test_big_endian_data_is_taken_by_value(ctx):
    lhs = np.arange(16 * 8, dtype=f32).reshape(16, 8) / 64
    rhs = np.linspace(-1, 1, RHS.size, dtype=f32).reshape(RHS.shape)
    want = vkgmm.gmm(lhs, rhs, GS)
    np.testing.assert_array_equal(vkgmm.gmm(lhs.astype(">f4"), rhs.astype(">f4"), GS), want)
    np.testing.assert_array_equal(vkgmm.gmm(lhs.astype(">f8"), rhs.astype(">f4"), GS), want)  # as float64 is
    np.testing.assert_array_equal(vkgmm.Array(lhs.astype(">f4")).numpy(), lhs)
    bits = vkgmm.bf16_bits(lhs)
    widened = (bits.astype(np.uint32) << 16).view(f32)  # bf16 is float32's top half
    np.testing.assert_array_equal(vkgmm.to_float32(bits.astype(">u2")), widened)
    half = lhs.astype(np.float16)
    np.testing.assert_array_equal(vkgmm.to_float32(half.view(np.uint16).astype(">u2"), "f16"), half.astype(f32))


def test_zero_dimensional_data_keeps_its_shape(ctx):
    a = vkgmm.Array(np.float32(3))
    assert a.shape == () and a.numpy().shape == () and a.numpy() == 3
    a.upload(np.float32(2))
    assert a.numpy() == 2
    refused(r"lhs: expected rank 2 \[m, k\], got shape \(\)", vkgmm.gmm, np.float32(1), np.ones((1, 1, 1), f32), [1])


def test_routing_counts_are_checked(ctx):
    lhs, w = np.ones((4, 8), f32), np.ones((3, 8, 4), f32)
    refused("ids: shape \\(4, 0\\) routes no slot", vkgmm.gmm_ids, lhs, w, np.zeros((4, 0), np.int32))
    refused("ids: shape \\(4, 0\\) routes no slot", vkgmm.gmm_ids, lhs, w, np.zeros((4, 0), np.int32),
            np.zeros((4, 0), f32))
    refused("num_experts: 0 experts", vkgmm.gmm_ids, lhs, w, np.zeros((4, 2), np.int32), num_experts=0)
    refused("k: expected an integer", vkgmm.top_k, np.zeros((4, 3), f32), 1.7)
    refused("k: expected an integer", vkgmm.top_k, np.zeros((4, 3), f32), None)
