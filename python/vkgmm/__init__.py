"""vkgmm for Python: grouped matrix multiplication (the core of Mixture-of-Experts layers) on any Vulkan
device, with JAX megablox's signatures on numpy arrays.

    import numpy as np, vkgmm
    out = vkgmm.gmm(lhs, rhs, group_sizes)                    # lhs [m, k], rhs [G, k, n] -> [m, n]
    grads = vkgmm.tgmm(lhs.T, d_out, group_sizes)             # [G, k, n]
    d_lhs, d_rhs = vkgmm.gmm_backward(lhs, rhs, group_sizes, d_out)

Operands are numpy arrays (uploaded per call) or vkgmm.Arrays (device-resident, uploaded once: weights).
Plans (GmmPlan, TgmmPlan, GmmBackwardPlan, IdsGmmPlan) check a problem once for repeated calls. Bad input
raises ContractError (a ValueError) with the library's message naming the argument; device failures raise
DeviceError (a RuntimeError). The device waits release the GIL; one Context serves any number of threads.
"""

from ._vkgmm import Array, Context, ContractError, DeviceError, __version__
from ._context import default_context, set_default_context
from ._ops import GmmBackwardPlan, GmmPlan, TgmmPlan, gmm, gmm_backward, tgmm
from ._moe import moe_layer, moe_layer_vjp
from ._routing import IdsGmmPlan, gmm_ids, gmm_ids_vjp, top_k, top_k_backward
from ._weights import BLOCK_FORMATS, bf16_bits, dequantize, quantize, read_gguf, to_float32

__all__ = [
    "Array", "Context", "ContractError", "DeviceError", "default_context", "set_default_context",
    "GmmPlan", "TgmmPlan", "GmmBackwardPlan", "IdsGmmPlan", "gmm", "tgmm", "gmm_backward", "gmm_ids",
    "gmm_ids_vjp", "top_k", "top_k_backward", "moe_layer", "moe_layer_vjp",
    "quantize", "dequantize", "read_gguf", "to_float32", "bf16_bits", "BLOCK_FORMATS", "__version__",
]
