"""The harness's own e4m3 quantizer: the suite's FP8 inputs, references and baselines must not
move when the library under test does (fused_mlp.quantize is what it measures, not what it uses).

Scales are amax / largest per row (token or output channel) or for the whole tensor (1 for an
all-zero one), fp32; values are divided by their scale, saturated at ±largest and rounded to
e4m3. Two encodings: OCP e4m3fn (largest 448) everywhere, and for the W8A8 Cases on an MI300
e4m3fnuz (largest 240), the only one its FP8 MFMA and torch._scaled_mm there take.
"""

from __future__ import annotations

import torch

from workload.fp8_dtypes import SCALE_NAMES, WEIGHT_NAMES, form, granularity

E4M3 = torch.float8_e4m3fn
E4M3FNUZ = torch.float8_e4m3fnuz
SMALLEST_SCALE = float(torch.finfo(torch.float32).tiny)
# AMD architectures whose FP8 tensor cores take only the fnuz encodings (CDNA 3: MI300X/MI325X),
# and those that take OCP e4m3fn (CDNA 4: MI355X)
FNUZ_GFX = ("gfx940", "gfx941", "gfx942")
OCP_FP8_GFX = ("gfx950",)


def amd_gfx(device) -> str | None:
    """The gfx name of a ROCm GPU ('gfx942'), or None off ROCm."""
    device = torch.device(device)
    if device.type != "cuda" or not torch.version.hip or not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_properties(device).gcnArchName.split(":", 1)[0]


def w8a8_dtype(device) -> torch.dtype:
    """The e4m3 encoding of the W8A8 Cases on `device`: e4m3fnuz on an MI300, e4m3fn elsewhere."""
    return E4M3FNUZ if amd_gfx(device) in FNUZ_GFX else E4M3


def quantize(t: torch.Tensor, granularity: str, fp8_dtype: torch.dtype = E4M3) -> tuple[torch.Tensor, torch.Tensor]:
    """(e4m3 values, fp32 scales (rows,) or (1,)) of a finite (..., K) tensor."""
    q, scale = quantize_unchecked(t, granularity, fp8_dtype)
    if not torch.isfinite(scale).all():
        raise ValueError("an FP8 input holds NaN or Inf: it has no scale")
    return q, scale


def quantize_unchecked(t: torch.Tensor, granularity: str,
                       fp8_dtype: torch.dtype = E4M3) -> tuple[torch.Tensor, torch.Tensor]:
    """quantize without the finiteness check (no read-back: for use inside timed baselines)."""
    if granularity not in ("row", "tensor"):
        raise ValueError(f"granularity={granularity!r}; expected 'row' or 'tensor'")
    largest = float(torch.finfo(fp8_dtype).max)  # 448 (e4m3fn), 240 (e4m3fnuz)
    flat = t.float().reshape(-1 if granularity == "row" else 1, t.shape[-1] if granularity == "row" else t.numel())
    amax = flat.abs().amax(dim=1)
    scale = torch.where(amax > 0, (amax / largest).clamp_min(SMALLEST_SCALE), torch.ones_like(amax))
    q = (flat / scale[:, None]).clamp(-largest, largest).to(fp8_dtype)
    return q.reshape(t.shape), scale


def dequantize(q: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """q * scale (one per row of q's last dim, or one) in `dtype`."""
    rows = q.to(torch.float64 if dtype == torch.float64 else torch.float32).reshape(-1, q.shape[-1])
    s = scale.to(rows.dtype).reshape(-1, 1)
    return (rows * s).reshape(q.shape).to(dtype)


def quantize_inputs(case, inputs: dict) -> dict:
    """An FP8 Case's inputs from the same Case's bf16 ones (tensors.make_inputs): every weight
    quantized to e4m3 with its scales, and x too for W8A8 (x_scale None for W8A16); W8A8 in the
    device's encoding (w8a8_dtype), W8A16's weights in e4m3fn."""
    g = granularity(case.dtype)
    w8a8 = form(case.dtype) == "w8a8"
    encoding = w8a8_dtype(inputs["x"].device) if w8a8 else E4M3
    for name in WEIGHT_NAMES[case.op]:
        inputs[name], inputs[SCALE_NAMES[name]] = quantize(inputs[name], g, encoding)
    if w8a8:
        inputs["x"], inputs["x_scale"] = quantize(inputs["x"], g, encoding)
    else:
        inputs["x_scale"] = None
    return inputs
