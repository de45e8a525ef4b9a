"""Element types between numpy and vkgmm.

numpy has no bfloat16: bf16 data is taken as uint16 bit patterns with an explicit dtype ("bf16"), or as
ml_dtypes.bfloat16 arrays where ml_dtypes is installed. Block formats (q8_0, ...) are uint8 bytes.
"""

from __future__ import annotations

import numpy as np

from ._vkgmm import ContractError, _block_format_names

_FLOAT_NAMES = {"f32": "f32", "float32": "f32", "f16": "f16", "float16": "f16", "bf16": "bf16",
                "bfloat16": "bf16"}
# The block formats by their canonical names (q4_K), keyed by any case: the library's list.
_BLOCK_FORMATS = {name.lower(): name for name in _block_format_names().split(", ")}


def dtype_name(dtype, what: str = "dtype") -> str:
    """vkgmm's name ("f32", "f16", "bf16", "q4_K", ...) of a numpy dtype, a type, or a name; refused naming
    the argument `what`."""
    if isinstance(dtype, str):
        key = dtype.lower()
        if key in _FLOAT_NAMES:
            return _FLOAT_NAMES[key]
        if key in _BLOCK_FORMATS:
            return _BLOCK_FORMATS[key]
        raise ContractError(f"{what}: unknown type {dtype!r} (expected f32, f16, bf16 or one of "
                            f"{_block_format_names()})")
    if dtype is None:
        raise ContractError(f"{what}: None is no type (expected float32, float16 or bfloat16)")
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise ContractError(f"{what}: unknown type {dtype!r}") from None
    if name in _FLOAT_NAMES:
        return _FLOAT_NAMES[name]
    raise ContractError(f"{what}: {name} is not a type vkgmm computes in (float32, float16, bfloat16)")


def _holders(name: str):
    """The numpy dtype names whose arrays hold values of vkgmm type `name`."""
    if name == "f32":
        return ("float32",)
    if name == "f16":
        return ("float16",)
    if name == "bf16":
        return ("uint16", "bfloat16")
    return ("uint8",)


def array_dtype_name(data: np.ndarray, dtype, what: str) -> str:
    """The vkgmm type of `data` (given as `dtype`, or inferred from data's own dtype); refuses data whose
    numpy dtype does not hold that type, naming `what`."""
    held = np.asarray(data).dtype.name
    if dtype is None:
        if held == "uint16":
            raise ContractError(f"{what}: uint16 data needs dtype='bf16' (numpy has no bfloat16): pass "
                                "vkgmm.Array(data, 'bf16'), or ml_dtypes.bfloat16 data")
        if held == "uint8":
            raise ContractError(f"{what}: uint8 data holds a block format's bytes: give its dtype (one of "
                                f"{_block_format_names()}), or pass the Array vkgmm.quantize made")
        return dtype_name(held, what)
    name = dtype_name(dtype, what)
    if held not in _holders(name):
        raise ContractError(f"{what}: {held} data cannot hold {name} values (expected {' or '.join(_holders(name))})")
    return name


def is_bfloat16_type(dtype) -> bool:
    """Whether dtype is ml_dtypes' bfloat16 (compared by name: ml_dtypes need not be installed)."""
    if isinstance(dtype, str):
        return False
    try:
        return np.dtype(dtype).name == "bfloat16"
    except TypeError:
        return False


def host_input(x, what: str):
    """A numpy operand as vkgmm takes it: float64 (numpy's default) becomes float32; float32, float16,
    uint16 (bf16) and ml_dtypes.bfloat16 stay as they are; anything else is refused."""
    a = np.asarray(x)
    if not a.dtype.isnative:  # big-endian data: its values, not its bytes, in the device's order
        a = a.astype(a.dtype.newbyteorder("="))
    if a.dtype == np.float64:
        a = a.astype(np.float32)
    if a.dtype.name not in ("float32", "float16", "uint16", "bfloat16", "uint8"):
        raise ContractError(f"{what}: {a.dtype.name} data; vkgmm takes float32, float16 or bfloat16 (uint16 bits)")
    # Not np.ascontiguousarray, which makes 0-d data 1-d.
    return a if a.flags.c_contiguous else np.copy(a, order="C")


def host_output(a: np.ndarray, requested):
    """out as the caller asked for it: bf16 as ml_dtypes.bfloat16 when that type was requested, else
    uint16 bit patterns."""
    if is_bfloat16_type(requested):
        return a.view(np.dtype(requested))
    return a
