"""Quantized expert weights: GGUF's block formats (BLOCK_FORMATS), made from floats by the library's
quantizers or read from a GGUF file, as device Arrays gmm takes as rhs ([experts, n, k], blocks along k:
GGUF's layout for expert tensors, the transposed one)."""

from __future__ import annotations

import numpy as np

from . import _context, _dtypes
from ._vkgmm import Array, ContractError, _block_format_names, _decode16, _dequantize, _encode16, _quantize, _read_gguf_tensor

# The block formats gmm reads as rhs, by their canonical names ("q8_0", "q4_K", ...), as the library lists them.
BLOCK_FORMATS: tuple = tuple(_block_format_names().split(", "))


def quantize(w, format: str, *, context=None) -> Array:
    """w float32 [experts, n, k] or [n, k] (k a multiple of the block: 32, or 256 for the K formats) as a
    device Array of `format` with shape (experts, n, k). Round to nearest per block at least (never less
    accurate than ggml's reference quantizers where those round to nearest: docs/quantized-weights.md)."""
    w = np.asarray(w)
    if w.dtype.kind not in "biuf":  # a cast would drop complex values' imaginary parts
        raise ContractError(f"quantize: w: {w.dtype.name} data; quantize takes real numbers (floats or integers)")
    fmt = _dtypes.dtype_name(format, "format")
    with np.errstate(over="ignore"):  # a value past float32's range is refused below, by name
        w32 = w.astype(np.float32)
    try:
        blocks = _quantize(w32, fmt)
    except ContractError as e:
        # The quantizer refuses the first value it cannot hold (after the format's and shape's rules) by its
        # flat index: named here at its index in w, as given (a float64 value past float32's range reads as
        # infinite after the cast).
        if "is not finite" not in str(e):
            raise
        i = np.unravel_index(int(np.argmax(~np.isfinite(w32))), w.shape)
        why = (f"is not finite ({fmt} holds finite values only)" if not np.isfinite(w[i])
               else "is past float32's range (|w| <= 3.4028235e+38), which quantize reads")
        raise ContractError(f"quantize: w[{', '.join(str(int(x)) for x in i)}] = {w[i]} {why}") from None
    shape = w32.shape if w32.ndim == 3 else (1,) + w32.shape
    return Array(blocks, fmt, context=_context.resolve(context), shape=list(shape))


def dequantize(weights: Array) -> np.ndarray:
    """A block-format Array's values as float32 [experts, n, k]: exactly what the kernel reads."""
    if not isinstance(weights, Array) or weights.dtype not in BLOCK_FORMATS:
        got = repr(weights) if isinstance(weights, Array) else type(weights).__name__
        raise ContractError(f"weights: expected a block-format vkgmm.Array (vkgmm.quantize, vkgmm.read_gguf), got {got}")
    return _dequantize(weights.numpy(), weights.dtype)


def read_gguf(path: str, tensor: str, *, context=None) -> Array:
    """An expert tensor of a GGUF v3 file (dims [k, n, E] or [k, n]; F32, F16, BF16 or one of
    vkgmm.BLOCK_FORMATS) as a device Array of shape (E, n, k), (1, n, k) for a 2-D tensor such as a
    router's ffn_gate_inp (router_w is then .numpy()[0].T): gmm's rhs in the transposed layout (pass
    transpose_rhs=True for a float tensor; a block format implies it). moe_layer takes a float tensor as
    it is with transpose_weights=True (a block format is in that layout anyway)."""
    fmt, shape, data = _read_gguf_tensor(str(path), tensor)
    c = _context.resolve(context)
    if fmt in ("f32", "f16", "bf16"):
        holder = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}[fmt]
        return Array(data.view(holder).reshape(shape), fmt, context=c)
    return Array(data, fmt, context=c, shape=list(shape))


def to_float32(x, dtype=None) -> np.ndarray:
    """Values as float32: float16 widened, bf16 (uint16 bits with dtype="bf16", or ml_dtypes.bfloat16)
    widened exactly; a vkgmm.Array read back first."""
    if isinstance(x, Array):
        dtype, x = x.dtype, x.numpy()
    a = np.asarray(x)
    if not a.dtype.isnative:  # big-endian bits: their values, as every other entry point takes them
        a = a.astype(a.dtype.newbyteorder("="))
    if a.dtype.name == "bfloat16":
        return _decode16(a.view(np.uint16), "bf16")
    if a.dtype == np.uint16:
        return _decode16(a, _dtypes.dtype_name(dtype or "bf16"))
    return a.astype(np.float32)


def bf16_bits(x) -> np.ndarray:
    """float values rounded to bf16 (nearest even), as uint16 bit patterns: bf16 data for vkgmm.Array(...,
    dtype="bf16") where ml_dtypes is not installed."""
    return _encode16(np.asarray(x, dtype=np.float32), "bf16")
