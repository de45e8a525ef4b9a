"""gmm and tgmm against numpy references: JAX tpu_gmm_test's shapes, random group sizes with empty groups,
f32 / f16 / bf16 and their tolerances, tilings, and sharding stitched through existing_out."""

import numpy as np
import pytest

import vkgmm
from conftest import assert_close, random_group_sizes, ref_gmm, ref_tgmm

# JAX tpu_gmm_test's (m, k, n), the largest kept modest for a CPU device.
SHAPES = [(128, 128, 128), (256, 128, 128), (128, 256, 128), (128, 128, 256), (256, 256, 256), (512, 2048, 256),
          (128, 8, 16)]
GROUPS = [1, 2, 4, 8]


def inputs(rng, m, k, n, groups, transpose_rhs=False):
    lhs = rng.standard_normal((m, k)).astype(np.float32)
    rhs = rng.standard_normal((groups, n, k) if transpose_rhs else (groups, k, n)).astype(np.float32)
    return lhs, rhs


@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("groups", GROUPS)
def test_gmm_f32(ctx, rng, m, k, n, groups):
    transpose_rhs = groups == 4  # the other layout on a quarter of the cases
    lhs, rhs = inputs(rng, m, k, n, groups, transpose_rhs)
    gs = random_group_sizes(rng, m, groups, empty=(1,) if groups > 2 else ())
    out = vkgmm.gmm(lhs, rhs, gs, transpose_rhs=transpose_rhs)
    assert out.dtype == np.float32 and out.shape == (m, n)
    assert_close(out, ref_gmm(lhs, rhs, gs, transpose_rhs=transpose_rhs), k)


@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("groups", [1, 8])
def test_tgmm_f32(ctx, rng, m, k, n, groups):
    lhs, rhs = rng.standard_normal((k, m)).astype(np.float32), rng.standard_normal((m, n)).astype(np.float32)
    gs = random_group_sizes(rng, m, groups, empty=(0, 5) if groups > 5 else ())
    out = vkgmm.tgmm(lhs, rhs, gs)
    assert out.shape == (groups, k, n)
    assert_close(out, ref_tgmm(lhs, rhs, gs), m)


@pytest.mark.parametrize("m,k,n", [(128, 128, 128), (256, 128, 512)])
def test_bf16_as_uint16_bits(ctx, rng, m, k, n):
    lhs, rhs = inputs(rng, m, k, n, 4)
    gs = random_group_sizes(rng, m, 4)
    lhs16, rhs16 = vkgmm.bf16_bits(lhs), vkgmm.bf16_bits(rhs)
    out = vkgmm.gmm(vkgmm.Array(lhs16, "bf16"), vkgmm.Array(rhs16, "bf16"), gs, preferred_element_type="bf16")
    assert out.dtype == np.uint16  # bf16 bit patterns
    want = ref_gmm(vkgmm.to_float32(lhs16), vkgmm.to_float32(rhs16), gs)
    assert_close(out, want, k, low_precision=True)
    t = vkgmm.tgmm(vkgmm.Array(vkgmm.bf16_bits(lhs.T.copy()), "bf16"), vkgmm.Array(out, "bf16"), gs,
                   preferred_element_type=np.float32)
    assert_close(t, ref_tgmm(vkgmm.to_float32(vkgmm.bf16_bits(lhs.T.copy())), vkgmm.to_float32(out), gs), m,
                 low_precision=True)


def test_f16_in_f16_out_and_mixed(ctx, rng):
    m, k, n = 128, 256, 128
    lhs, rhs = inputs(rng, m, k, n, 8)
    gs = random_group_sizes(rng, m, 8, empty=(3,))
    out = vkgmm.gmm(lhs.astype(np.float16), rhs.astype(np.float16), gs, preferred_element_type=np.float16)
    assert out.dtype == np.float16
    assert_close(out, ref_gmm(lhs.astype(np.float16), rhs.astype(np.float16), gs), k, low_precision=True)
    mixed = vkgmm.gmm(lhs, vkgmm.Array(vkgmm.bf16_bits(rhs), "bf16"), gs)  # f32 activations, bf16 weights
    assert_close(mixed, ref_gmm(lhs, vkgmm.to_float32(vkgmm.bf16_bits(rhs)), gs), k, low_precision=True)


def test_ml_dtypes_bfloat16(ctx, rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    lhs, rhs = inputs(rng, 64, 32, 16, 2)
    gs = random_group_sizes(rng, 64, 2)
    out = vkgmm.gmm(lhs.astype(ml_dtypes.bfloat16), rhs.astype(ml_dtypes.bfloat16), gs,
                    preferred_element_type=ml_dtypes.bfloat16)
    assert out.dtype == ml_dtypes.bfloat16
    want = ref_gmm(lhs.astype(ml_dtypes.bfloat16).astype(np.float32), rhs.astype(ml_dtypes.bfloat16).astype(np.float32), gs)
    assert_close(out.astype(np.float32), want, 32, low_precision=True)


@pytest.mark.parametrize("tiling", [(128, 128, 128), (64, 64, 64), (32, 32, 32), (16, 128, 64)])
def test_tilings(ctx, rng, tiling):
    m, k, n = 200, 96, 72  # ragged against every tile
    lhs, rhs = inputs(rng, m, k, n, 4)
    gs = random_group_sizes(rng, m - 9, 4, empty=(2,))  # rows past the groups are 0
    plan = vkgmm.GmmPlan(lhs, rhs, gs, tiling=tiling)
    assert all(0 < t <= want for t, want in zip(plan.tiling, tiling))
    assert plan.schedule in ("direct", "shared", "matrix")
    assert vkgmm.TgmmPlan(lhs.T.copy(), lhs[:, :n], gs, tiling=tiling).schedule in ("direct", "shared", "matrix")
    assert_close(plan(lhs, rhs), ref_gmm(lhs, rhs, gs), k)
    assert_close(vkgmm.tgmm(lhs.T.copy(), lhs[:, :n], gs, tiling=tiling),
                 ref_tgmm(lhs.T, lhs[:, :n], gs), m)


def test_tiling_callable_sees_each_ops_shape(ctx, rng):
    m, k, n = 96, 64, 48
    lhs, rhs = inputs(rng, m, k, n, 3)
    gs = random_group_sizes(rng, m, 3)
    seen = []

    def lookup(mm, kk, nn):
        seen.append((mm, kk, nn))
        return (32, 32, 32)

    assert_close(vkgmm.gmm(lhs, rhs, gs, tiling=lookup), ref_gmm(lhs, rhs, gs), k)
    assert (m, k, n) in seen
    seen.clear()
    vkgmm.gmm_backward(lhs, rhs, gs, rng.standard_normal((m, n)).astype(np.float32), tiling=lookup)
    assert (m, n, k) in seen  # d_lhs = gmm(d_out, rhs^T): its own (m, k, n)


def test_gmm_sharded_through_existing_out(ctx, rng):
    """Each shard holds some experts (group_offset, G_local = rhs.shape[0]); stitched through
    existing_out, the shards give the whole gmm (megablox's sharding)."""
    m, k, n, groups = 256, 128, 64, 8
    lhs, rhs = inputs(rng, m, k, n, groups)
    gs = random_group_sizes(rng, m, groups, empty=(0, 4))
    out = np.full((m, n), 7.0, np.float32)  # rows of no group keep what existing_out holds
    gs_short = gs.copy()
    gs_short[-1] = max(0, gs_short[-1] - 5)
    for offset in range(0, groups, 3):
        shard = rhs[offset:offset + 3]
        out = vkgmm.gmm(lhs, shard, gs_short, group_offset=offset, existing_out=out)
    want = ref_gmm(lhs, rhs, gs_short, existing_out=np.full((m, n), 7.0))
    assert_close(out, want, k)


def test_tgmm_sharded_through_existing_out(ctx, rng):
    m, k, n, groups = 192, 64, 32, 6
    lhs, rhs = rng.standard_normal((k, m)).astype(np.float32), rng.standard_normal((m, n)).astype(np.float32)
    gs = random_group_sizes(rng, m, groups, empty=(2,))
    prior = rng.standard_normal((2, k, n)).astype(np.float32)
    out = vkgmm.tgmm(lhs, rhs, gs, group_offset=3, num_actual_groups=2, existing_out=prior)
    assert out.shape == (2, k, n)
    assert_close(out, ref_tgmm(lhs, rhs, gs, 3, 2, existing_out=prior), m)


def test_device_arrays_reused_by_a_plan(ctx, rng):
    m, k, n = 128, 64, 32
    lhs, rhs = inputs(rng, m, k, n, 4)
    gs = random_group_sizes(rng, m, 4)
    weights = vkgmm.Array(rhs)  # uploaded once
    x = vkgmm.Array(lhs)
    out = vkgmm.Array.empty((m, n), "f32")
    plan = vkgmm.GmmPlan(x, weights, gs)
    for _ in range(3):
        lhs2 = rng.standard_normal((m, k)).astype(np.float32)
        x.upload(lhs2)
        assert plan(x, weights, out=out) is out
        assert_close(out.numpy(), ref_gmm(lhs2, rhs, gs), k)
    np.testing.assert_array_equal(weights.numpy(), rhs)
    # any array-like: a transposed view is made contiguous, float64 becomes float32
    x.upload(lhs2.T.copy().T.astype(np.float64))
    assert x.numpy().dtype == np.float32 and np.array_equal(x.numpy(), lhs2)
    assert vkgmm.Array([[1.0, 2.0]]).numpy().dtype == np.float32


def test_empty_and_degenerate(ctx, rng):
    lhs, rhs = inputs(rng, 0, 16, 8, 2)
    assert vkgmm.gmm(lhs, rhs, [0, 0]).shape == (0, 8)
    lhs, rhs = inputs(rng, 5, 1, 1, 3)
    assert_close(vkgmm.gmm(lhs, rhs, [0, 5, 0]), ref_gmm(lhs, rhs, [0, 5, 0]), 1)
    assert_close(vkgmm.tgmm(lhs.T.copy(), lhs, [0, 0, 0]), np.zeros((3, 1, 1)), 1)


def test_megablox_positional_arguments(ctx, rng):
    """megablox's order and spellings: group_offset as a one-element array or None, num_actual_groups."""
    lhs, rhs = inputs(rng, 64, 32, 16, 2)
    gs = np.array([10, 20, 30], np.int32)
    out = vkgmm.gmm(lhs, rhs, gs, np.float32, (32, 32, 16), np.array([1], np.int32), None, False)
    assert_close(out, ref_gmm(lhs, rhs, gs, group_offset=1), 32)
    t = vkgmm.tgmm(lhs.T.copy(), lhs[:, :16], gs, np.float32, (32, 32, 16), None, 2, None)
    assert_close(t, ref_tgmm(lhs.T, lhs[:, :16], gs, 0, 2), 64)
    with pytest.raises(ValueError, match="group_offset: expected an integer"):
        vkgmm.gmm(lhs, rhs, gs, group_offset=[0, 1])


def test_float64_input_becomes_float32(ctx, rng):
    lhs, rhs = rng.standard_normal((32, 16)), rng.standard_normal((2, 16, 8))
    assert_close(vkgmm.gmm(lhs, rhs, [16, 16]), ref_gmm(lhs.astype(np.float32), rhs.astype(np.float32), [16, 16]), 16)


def test_eager_pipelines_context(rng):
    # A context that compiles every variant when a plan is made runs the same products, and reports it.
    eager = vkgmm.Context(validate=True, eager_pipelines=True)
    assert eager.options["eager_pipelines"] is True
    assert eager.options["app_workspaces"] is True  # each run gives its plan a workspace of its own
    lhs, rhs = inputs(rng, 24, 16, 12, 3)
    gs = np.array([10, 0, 14], np.int32)
    assert_close(vkgmm.gmm(lhs, rhs, gs, context=eager), ref_gmm(lhs, rhs, gs), 16)
    assert eager.take_validation_messages() == []


def test_matrix_schedule_context(rng):
    # A context forcing the matrix schedule: f16 calls take the matrix units where the device has them
    # (info says which), the others the shared schedule; the products are the same either way.
    c = vkgmm.Context(validate=True, schedule="matrix")
    assert c.options["schedule"] == "matrix"
    units, shapes = c.info["matrix_units"], c.info["matrix_shapes"]
    assert isinstance(shapes, list)
    if units is not None:
        extension, m, n, k = units
        assert ("KHR " if extension == "VK_KHR_cooperative_matrix" else "NV ") + "%dx%dx%d f16*f16+f32->f32 subgroup" % (
            m, n, k) in shapes
        assert c.info["matrix_subgroup_size"] > 0
    assert isinstance(c.info["matrix_automatic"], bool)
    assert units is not None or not c.info["matrix_automatic"]
    assert (c.info["architecture"] == "cpu") == (c.info["type"] == "cpu")
    lhs, rhs = inputs(rng, 40, 24, 20, 3)
    gs = np.array([13, 0, 27], np.int32)
    out = vkgmm.gmm(lhs.astype(np.float16), rhs.astype(np.float16), gs, preferred_element_type=np.float32, context=c)
    assert_close(out, ref_gmm(lhs.astype(np.float16), rhs.astype(np.float16), gs), 24, low_precision=True)
    assert_close(vkgmm.gmm(lhs, rhs, gs, context=c), ref_gmm(lhs, rhs, gs), 24)
    assert c.take_validation_messages() == []
    with pytest.raises(ValueError, match="expected automatic, shared, direct or matrix"):
        vkgmm.Context(schedule="tensor")
    # A context's schedule reads back as a name the constructor takes, the automatic one too.
    default = vkgmm.Context()
    assert default.options["schedule"] == "automatic"
    assert vkgmm.Context(schedule=default.options["schedule"]).options["schedule"] == "automatic"
    # The matrix extension: one of the two, reported as given; any other refused by name.
    assert vkgmm.Context(matrix_extension="VK_NV_cooperative_matrix").options["matrix_extension"] == \
        "VK_NV_cooperative_matrix"
    with pytest.raises(ValueError, match="matrix_extension: 'VK_AMD_matrix'"):
        vkgmm.Context(matrix_extension="VK_AMD_matrix")
