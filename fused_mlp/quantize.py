"""FP8 (e4m3) quantization: a tensor as e4m3 values and fp32 scales, value ≈ q * scale.

    q, scale = quantize_fp8(w, granularity="row")     # weights: one scale per output channel
    q, scale = quantize_fp8(x, granularity="row")     # activations: one scale per token (row)
    q, scale = quantize_fp8(x, granularity="tensor")  # one scale for the whole tensor
    q, scale = quantize_fp8(w, "row", fp8_dtype=native_fp8_dtype(device))  # the GPU's own e4m3

Two e4m3 encodings: OCP float8_e4m3fn (the default; NVIDIA sm_89+, MI355X) and
float8_e4m3fnuz (MI300X/MI325X's FP8 MFMA takes only it). The scale is amax / the format's
largest value (448 for e4m3fn, 240 for e4m3fnuz), so the largest magnitude of each row (or of
the tensor) maps onto it and nothing saturates. With a given `scale` (a calibrated, static one)
values beyond ±largest * scale saturate. A row (or tensor) of zeros gets scale 1.0: any scale
dequantizes zeros to zeros, and a zero scale is refused by the kernels. NaN or ±Inf in the input
has no honest scale: quantize_fp8 raises rather than hiding it.
"""

from __future__ import annotations

import torch

E4M3_MAX = 448.0  # torch.finfo(torch.float8_e4m3fn).max
FP8_DTYPE = torch.float8_e4m3fn  # the default encoding, and the one W8A16's weights are read in
# The e4m3 encodings by the names fused_mlp._arch gives an architecture's native FP8 format
FP8_FORMATS = {"e4m3fn": torch.float8_e4m3fn, "e4m3fnuz": torch.float8_e4m3fnuz}
E4M3_DTYPES = tuple(FP8_FORMATS.values())
GRANULARITIES = ("tensor", "row")
_FLOAT_INPUTS = (torch.float32, torch.float16, torch.bfloat16)
# The smallest scale quantize_fp8 picks: fp32's smallest normal. A subnormal scale could be
# flushed to zero by the GPU's fast multiply, so the kernels refuse one (see check_scale).
MIN_SCALE = torch.finfo(torch.float32).tiny


def quantize_fp8(tensor: torch.Tensor, granularity: str = "tensor", scale: torch.Tensor | None = None,
                 fp8_dtype: torch.dtype = FP8_DTYPE) -> tuple[torch.Tensor, torch.Tensor]:
    """(q, scale): q in `fp8_dtype` (float8_e4m3fn or float8_e4m3fnuz) with tensor's shape,
    scale in float32 — shape (1,) for granularity "tensor", (rows,) for "row" (rows = every dim
    but the last, flattened: tokens for activations, output channels for an (out_features,
    in_features) weight).

    `scale`: use this scale (shape (1,) or (rows,)) instead of amax / largest; values beyond
    ±largest * scale saturate. Raises ValueError for NaN/±Inf in `tensor` or a bad `scale`.
    """
    check_fp8_dtype(fp8_dtype)
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.dtype not in _FLOAT_INPUTS:
        raise TypeError(f"tensor has dtype {tensor.dtype}; quantize_fp8 takes float32, float16 or bfloat16")
    if granularity not in GRANULARITIES:
        raise ValueError(f"granularity={granularity!r} is not supported; expected one of {list(GRANULARITIES)}")
    if granularity == "row" and tensor.dim() < 2:
        raise ValueError(f"granularity 'row' needs a tensor of at least 2 dims, got shape {tuple(tensor.shape)}")
    values = tensor.float()
    rows = values.reshape(-1, values.shape[-1]) if granularity == "row" else values.reshape(1, -1)
    if not torch.isfinite(rows).all():
        raise ValueError("tensor holds NaN or Inf: no FP8 scale represents it (clean or clip it first)")
    if scale is None:
        scale = _amax_scales(rows, fp8_dtype)
    else:
        expected = rows.shape[0]
        scale = check_scale("scale", scale, expected, "rows" if granularity == "row" else "the tensor",
                            allow_per_tensor=granularity == "tensor")
        scale = scale.expand(expected)
    return _to_e4m3(rows, scale, fp8_dtype).reshape(tensor.shape), scale.contiguous()


def quantize_activations_fp8(x: torch.Tensor, granularity: str = "row",
                             fp8_dtype: torch.dtype = FP8_DTYPE) -> tuple[torch.Tensor, torch.Tensor]:
    """quantize_fp8 for activations inside a forward pass: the same scales (amax / largest),
    without the NaN/Inf check, which reads the tensor back (a host synchronisation per call). A
    non-finite value is not refused: it makes its row's (or the tensor's) output non-finite, as
    NaN and Inf propagate through the bf16 MLP. x: (..., K) in float32/float16/bfloat16."""
    if granularity not in GRANULARITIES:
        raise ValueError(f"granularity={granularity!r} is not supported; expected one of {list(GRANULARITIES)}")
    check_fp8_dtype(fp8_dtype)
    values = x.float()
    rows = values.reshape(-1, values.shape[-1]) if granularity == "row" else values.reshape(1, -1)
    scale = _amax_scales(rows, fp8_dtype)
    return _to_e4m3(rows, scale, fp8_dtype).reshape(x.shape), scale.contiguous()


def native_fp8_dtype(device: torch.device | str | None = None) -> torch.dtype:
    """The e4m3 encoding the W8A8 kernels take on `device`: its FP8 tensor cores' own
    (float8_e4m3fnuz on MI300X/MI325X, float8_e4m3fn elsewhere); float8_e4m3fn off the GPU (the
    interpreter computes either) and on a GPU without FP8 tensor cores (W8A16's weights)."""
    device = torch.device("cuda" if device is None else device)
    if device.type != "cuda":
        return FP8_DTYPE
    from ._arch import device_arch

    return FP8_FORMATS.get(device_arch(device).fp8_format, FP8_DTYPE)


def format_of(fp8_dtype: torch.dtype) -> str:
    """"e4m3fn" or "e4m3fnuz": an e4m3 dtype by the name fused_mlp._arch gives formats."""
    return next(name for name, dtype in FP8_FORMATS.items() if dtype == fp8_dtype)


def check_fp8_dtype(fp8_dtype) -> None:
    if fp8_dtype not in E4M3_DTYPES:
        raise TypeError(f"fp8_dtype={fp8_dtype}; expected torch.float8_e4m3fn or torch.float8_e4m3fnuz "
                        "(fused_mlp.native_fp8_dtype(device) names the GPU's own)")


def largest(fp8_dtype: torch.dtype) -> float:
    """The largest finite value of an e4m3 encoding: 448 (e4m3fn), 240 (e4m3fnuz)."""
    return float(torch.finfo(fp8_dtype).max)


def _amax_scales(rows: torch.Tensor, fp8_dtype: torch.dtype) -> torch.Tensor:
    """One scale per row of a 2-D float32 tensor: amax / largest (at least MIN_SCALE), 1 for a zero row."""
    amax = rows.abs().amax(dim=1) if rows.numel() else torch.zeros(rows.shape[0], device=rows.device)
    return torch.where(amax > 0, (amax / largest(fp8_dtype)).clamp_min(MIN_SCALE), torch.ones_like(amax))


def _to_e4m3(rows: torch.Tensor, scale: torch.Tensor, fp8_dtype: torch.dtype) -> torch.Tensor:
    """rows / scale (one per row), saturated at ±largest, as e4m3."""
    bound = largest(fp8_dtype)
    return (rows / scale[:, None]).clamp(-bound, bound).to(fp8_dtype)


def dequantize_fp8(q: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """q * scale in `dtype`, with scale of shape (1,) or (rows,) as quantize_fp8 returns it."""
    if q.dtype not in E4M3_DTYPES:
        raise TypeError(f"q has dtype {q.dtype}; expected torch.float8_e4m3fn or torch.float8_e4m3fnuz")
    rows = q.float().reshape(-1, q.shape[-1]) if q.dim() >= 2 else q.float().reshape(1, -1)
    s = scale.float().reshape(-1)
    if s.numel() not in (1, rows.shape[0]):
        raise ValueError(f"scale has {s.numel()} values; expected 1 or one per row ({rows.shape[0]})")
    return (rows * s[:, None]).reshape(q.shape).to(dtype)


def check_scale(name: str, scale, rows: int, what: str, allow_per_tensor: bool = True,
                check_values: bool = True) -> torch.Tensor:
    """`scale` as a contiguous 1-D float32 tensor of 1 value (per tensor) or `rows` values (per
    row of `what`). Shapes accepted: () / (1,) / (1, 1) per tensor; (rows,) / (rows, 1) per row.
    With `check_values`, every scale must be finite, positive and normal (this reads the scales
    back: one device synchronisation)."""
    if not isinstance(scale, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of float32 scales, got {type(scale).__name__}")
    if scale.dtype != torch.float32:
        raise TypeError(f"{name} has dtype {scale.dtype}; scales are float32")
    shape = tuple(scale.shape)
    per_tensor = scale.numel() == 1 and scale.dim() <= 2
    per_row = shape in ((rows,), (rows, 1))
    if not (per_row or (per_tensor and allow_per_tensor)):
        allowed = "(), (1,), " if allow_per_tensor else ""
        raise ValueError(f"{name} has shape {shape}; expected {allowed}({rows},) or ({rows}, 1): "
                         f"one scale{' for the tensor or' if allow_per_tensor else ''} per row of {what}")
    flat = scale.reshape(-1).contiguous()
    if check_values and flat.numel():
        bad = ~(torch.isfinite(flat) & (flat >= MIN_SCALE))
        if bad.any():
            first = flat[bad.nonzero()[0, 0]].item()
            raise ValueError(f"{name} holds {first!r}: scales must be finite, positive and at least "
                             f"{MIN_SCALE:.3e} (fp32's smallest normal; a GPU may flush smaller ones to zero)")
    return flat
