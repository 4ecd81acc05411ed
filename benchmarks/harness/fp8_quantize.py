"""The harness's own e4m3 quantizer: the suite's FP8 inputs, references and baselines must not
move when the library under test does (fused_mlp.quantize is what it measures, not what it uses).

Scales are amax / 448 per row (token or output channel) or for the whole tensor (1 for an
all-zero one), fp32; values are divided by their scale, saturated at ±448 and rounded to e4m3.
"""

from __future__ import annotations

import torch

from workload.fp8_dtypes import SCALE_NAMES, WEIGHT_NAMES, form, granularity

E4M3 = torch.float8_e4m3fn
E4M3_LARGEST = float(torch.finfo(E4M3).max)  # 448
SMALLEST_SCALE = float(torch.finfo(torch.float32).tiny)


def quantize(t: torch.Tensor, granularity: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(e4m3 values, fp32 scales (rows,) or (1,)) of a finite (..., K) tensor."""
    q, scale = quantize_unchecked(t, granularity)
    if not torch.isfinite(scale).all():
        raise ValueError("an FP8 input holds NaN or Inf: it has no scale")
    return q, scale


def quantize_unchecked(t: torch.Tensor, granularity: str) -> tuple[torch.Tensor, torch.Tensor]:
    """quantize without the finiteness check (no read-back: for use inside timed baselines)."""
    if granularity not in ("row", "tensor"):
        raise ValueError(f"granularity={granularity!r}; expected 'row' or 'tensor'")
    flat = t.float().reshape(-1 if granularity == "row" else 1, t.shape[-1] if granularity == "row" else t.numel())
    amax = flat.abs().amax(dim=1)
    scale = torch.where(amax > 0, (amax / E4M3_LARGEST).clamp_min(SMALLEST_SCALE), torch.ones_like(amax))
    q = (flat / scale[:, None]).clamp(-E4M3_LARGEST, E4M3_LARGEST).to(E4M3)
    return q.reshape(t.shape), scale


def dequantize(q: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """q * scale (one per row of q's last dim, or one) in `dtype`."""
    rows = q.to(torch.float64 if dtype == torch.float64 else torch.float32).reshape(-1, q.shape[-1])
    s = scale.to(rows.dtype).reshape(-1, 1)
    return (rows * s).reshape(q.shape).to(dtype)


def quantize_inputs(case, inputs: dict) -> dict:
    """An FP8 Case's inputs from the same Case's bf16 ones (tensors.make_inputs): every weight
    quantized to e4m3 with its scales, and x too for W8A8 (x_scale None for W8A16)."""
    g = granularity(case.dtype)
    for name in WEIGHT_NAMES[case.op]:
        inputs[name], inputs[SCALE_NAMES[name]] = quantize(inputs[name], g)
    if form(case.dtype) == "w8a8":
        inputs["x"], inputs["x_scale"] = quantize(inputs["x"], g)
    else:
        inputs["x_scale"] = None
    return inputs
