# Type stubs of the vkgmm package (the extension module vkgmm._vkgmm and the Python layer around it).
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

Tiling = Tuple[int, int, int]
TilingArg = Union[None, Tiling, Callable[[int, int, int], Optional[Tiling]]]
DTypeArg = Union[str, type, np.dtype]
Operand = Union["Array", npt.ArrayLike]

class ContractError(ValueError):
    status: str

class DeviceError(RuntimeError):
    status: str

class Context:
    def __init__(self, *, device: Optional[str] = ..., validate: Optional[bool] = ..., schedule: Optional[str] = ...,
                 storage16: Optional[bool] = ..., vec4_loads: Optional[bool] = ..., texel_loads: Optional[bool] = ...,
                 timeout_s: Optional[float] = ..., eager_pipelines: Optional[bool] = ...,
                 matrix_extension: Optional[str] = ...) -> None: ...
    @property
    def info(self) -> dict[str, Any]: ...
    @property
    def options(self) -> dict[str, Any]: ...
    def take_validation_messages(self) -> list[str]: ...

class Array:
    def __init__(self, data: npt.ArrayLike, dtype: Optional[DTypeArg] = ..., *, context: Optional[Context] = ...,
                 shape: Optional[Sequence[int]] = ...) -> None: ...
    @staticmethod
    def empty(shape: Sequence[int], dtype: DTypeArg = ..., *, context: Optional[Context] = ...) -> Array: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def context(self) -> Context: ...
    def numpy(self) -> np.ndarray: ...
    def upload(self, data: npt.ArrayLike) -> None: ...

def default_context() -> Context: ...
def set_default_context(context: Optional[Context]) -> None: ...

class GmmPlan:
    context: Context
    lhs_type: str
    rhs_type: str
    out_type: str
    preferred_element_type: DTypeArg
    lhs_shape: Tuple[int, int]
    rhs_shape: Tuple[int, int, int]
    bias_shape: Tuple[int, int]
    out_shape: Tuple[int, int]
    def __init__(self, lhs: Operand, rhs: Operand, group_sizes: npt.ArrayLike,
                 preferred_element_type: DTypeArg = ..., tiling: TilingArg = ..., group_offset: int = ...,
                 existing_out: bool = ..., transpose_rhs: bool = ..., *, bias: bool = ...,
                 activation: Optional[str] = ..., context: Optional[Context] = ...) -> None: ...
    @property
    def tiling(self) -> Tiling: ...
    @property
    def schedule(self) -> str: ...
    def __call__(self, lhs: Operand, rhs: Operand, existing_out: Optional[Operand] = ..., *,
                 bias: Optional[Operand] = ..., out: Optional[Array] = ...) -> Union[np.ndarray, Array]: ...

class TgmmPlan:
    context: Context
    lhs_type: str
    rhs_type: str
    out_type: str
    preferred_element_type: DTypeArg
    lhs_shape: Tuple[int, int]
    rhs_shape: Tuple[int, int]
    out_shape: Tuple[int, int, int]
    def __init__(self, lhs: Operand, rhs: Operand, group_sizes: npt.ArrayLike,
                 preferred_element_type: DTypeArg = ..., tiling: TilingArg = ..., group_offset: int = ...,
                 num_actual_groups: Optional[int] = ..., existing_out: bool = ..., *,
                 context: Optional[Context] = ...) -> None: ...
    @property
    def tiling(self) -> Tiling: ...
    @property
    def schedule(self) -> str: ...
    def __call__(self, lhs: Operand, rhs: Operand, existing_out: Optional[Operand] = ..., *,
                 out: Optional[Array] = ...) -> Union[np.ndarray, Array]: ...

class GmmBackwardPlan:
    context: Context
    lhs_type: str
    rhs_type: str
    d_out_type: str
    lhs_shape: Tuple[int, int]
    rhs_shape: Tuple[int, int, int]
    d_out_shape: Tuple[int, int]
    bias_shape: Optional[Tuple[int, int]]
    def __init__(self, lhs: Operand, rhs: Operand, group_sizes: npt.ArrayLike, d_out_type: DTypeArg = ...,
                 tiling: TilingArg = ..., group_offset: int = ..., transpose_rhs: bool = ..., *,
                 bias: bool = ..., activation: Optional[str] = ..., context: Optional[Context] = ...) -> None: ...
    # (d_lhs, d_rhs), and d_bias after them for a plan made with bias=True; d_rhs None for frozen weights.
    def __call__(self, lhs: Operand, rhs: Operand, d_out: Operand, *,
                 bias: Optional[Operand] = ...) -> Tuple[Optional[np.ndarray], ...]: ...

class IdsGmmPlan:
    context: Context
    lhs_type: str
    rhs_type: str
    out_type: str
    preferred_element_type: DTypeArg
    num_experts: int
    ids_shape: Tuple[int, int]
    lhs_shape: Tuple[int, ...]
    rhs_shape: Tuple[int, int, int]
    bias_shape: Tuple[int, int]
    out_shape: Tuple[int, ...]
    def __init__(self, lhs: Operand, rhs: Operand, ids: npt.ArrayLike, combine: bool = ...,
                 preferred_element_type: DTypeArg = ..., tiling: TilingArg = ..., group_offset: int = ...,
                 num_experts: Optional[int] = ..., existing_out: bool = ..., transpose_rhs: bool = ..., *,
                 bias: bool = ..., activation: Optional[str] = ..., context: Optional[Context] = ...) -> None: ...
    @property
    def tiling(self) -> Tiling: ...
    @property
    def schedule(self) -> str: ...
    def __call__(self, lhs: Operand, rhs: Operand, ids: npt.ArrayLike, weights: Optional[Operand] = ...,
                 existing_out: Optional[Operand] = ..., *, bias: Optional[Operand] = ...,
                 out: Optional[Array] = ...) -> Union[np.ndarray, Array]: ...

def gmm(lhs: Operand, rhs: Operand, group_sizes: npt.ArrayLike, preferred_element_type: DTypeArg = ...,
        tiling: TilingArg = ..., group_offset: int = ..., existing_out: Optional[Operand] = ...,
        transpose_rhs: bool = ..., *, bias: Optional[Operand] = ..., activation: Optional[str] = ...,
        context: Optional[Context] = ..., out: Optional[Array] = ...) -> Any: ...
def tgmm(lhs: Operand, rhs: Operand, group_sizes: npt.ArrayLike, preferred_element_type: DTypeArg = ...,
         tiling: TilingArg = ..., group_offset: int = ..., num_actual_groups: Optional[int] = ...,
         existing_out: Optional[Operand] = ..., *, context: Optional[Context] = ...,
         out: Optional[Array] = ...) -> Any: ...
def gmm_backward(lhs: Operand, rhs: Operand, group_sizes: npt.ArrayLike, d_out: Operand, tiling: TilingArg = ...,
                 group_offset: int = ..., transpose_rhs: bool = ..., *, bias: Optional[Operand] = ...,
                 activation: Optional[str] = ...,
                 context: Optional[Context] = ...) -> Tuple[Optional[np.ndarray], ...]: ...
def gmm_ids(lhs: Operand, rhs: Operand, ids: npt.ArrayLike, weights: Optional[Operand] = ...,
            preferred_element_type: DTypeArg = ..., tiling: TilingArg = ..., group_offset: int = ...,
            num_experts: Optional[int] = ..., existing_out: Optional[Operand] = ..., transpose_rhs: bool = ..., *,
            bias: Optional[Operand] = ..., activation: Optional[str] = ..., context: Optional[Context] = ...,
            out: Optional[Array] = ...) -> Any: ...
def gmm_ids_vjp(lhs: Operand, rhs: Operand, ids: npt.ArrayLike, d_out: Operand, weights: Optional[Operand] = ..., *,
                bias: Optional[Operand] = ..., activation: Optional[str] = ..., group_offset: int = ...,
                num_experts: Optional[int] = ..., transpose_rhs: bool = ..., tiling: TilingArg = ...,
                context: Optional[Context] = ...) -> Tuple[np.ndarray, Dict[str, np.ndarray]]: ...
def moe_layer(x: Operand, router_w: Operand, w_up: Operand, w_down: Operand, *, top_k: int,
              b_up: Optional[Operand] = ..., b_down: Optional[Operand] = ..., activation: Optional[str] = ...,
              renormalize: bool = ..., expert_offset: int = ..., num_experts: Optional[int] = ...,
              transpose_weights: bool = ..., context: Optional[Context] = ...) -> np.ndarray: ...
def moe_layer_vjp(x: Operand, router_w: Operand, w_up: Operand, w_down: Operand, d_y: Optional[Operand] = ..., *,
                  top_k: int, b_up: Optional[Operand] = ..., b_down: Optional[Operand] = ...,
                  activation: Optional[str] = ..., renormalize: bool = ..., expert_offset: int = ...,
                  num_experts: Optional[int] = ..., target: Optional[Operand] = ..., transpose_weights: bool = ...,
                  context: Optional[Context] = ...) -> Tuple[np.ndarray, Dict[str, np.ndarray]]: ...

def top_k(logits: Operand, k: int, renormalize: bool = ..., *,
          context: Optional[Context] = ...) -> Tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]: ...
def top_k_backward(logits: Operand, ids: npt.ArrayLike, weights: Operand, d_weights: Operand,
                   renormalize: bool = ..., *, context: Optional[Context] = ...) -> npt.NDArray[np.float32]: ...

BLOCK_FORMATS: Tuple[str, ...]
__version__: str  # the library's version, "major.minor.patch"

def quantize(w: npt.ArrayLike, format: str, *, context: Optional[Context] = ...) -> Array: ...
def dequantize(weights: Array) -> np.ndarray: ...
def read_gguf(path: str, tensor: str, *, context: Optional[Context] = ...) -> Array: ...
def to_float32(x: Union[Array, npt.ArrayLike], dtype: Optional[DTypeArg] = ...) -> np.ndarray: ...
def bf16_bits(x: npt.ArrayLike) -> np.ndarray: ...
