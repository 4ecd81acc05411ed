"""The FP8 peers of linear_act and gated_mlp: torch._scaled_mm for every GEMM with the
activation (and gating) in eager, and torch.compile of it (ops/<op>.py list them). They import
no op spec, so the op registry can import them."""

from __future__ import annotations

import functools

from benchmarks.harness.peer import Peer
from workload.fp8_dtypes import FP8_DTYPES, SCALED_MM, SCALED_MM_COMPILE, form, is_fp8


def _scales_2d(x_scale, w_scale, M: int, N: int):
    """_scaled_mm's scale shapes: () for a tensor-wise scale, (M, 1) and (1, N) row-wise."""
    if x_scale.numel() == 1 and w_scale.numel() == 1:
        return x_scale.reshape(()), w_scale.reshape(())
    return x_scale.reshape(-1, 1).expand(M, 1).contiguous(), w_scale.reshape(1, -1).expand(1, N).contiguous()


@functools.cache
def scaled_mm_takes_bias(device: str, rowwise: bool) -> bool:
    """Whether torch._scaled_mm takes bias= for this scaling on this device (cuBLASLt takes a
    bf16 bias with tensor-wise scales; other paths may refuse it): probed once on tiny tensors."""
    import torch

    from benchmarks.harness.fp8_quantize import w8a8_dtype

    e4m3 = w8a8_dtype(device)
    a, b = (torch.ones(16, 32, device=device).to(e4m3) for _ in range(2))
    one = torch.ones((), device=device)
    sa, sb = (one.expand(16, 1).contiguous(), one.expand(1, 16).contiguous()) if rowwise else (one, one)
    try:
        torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, bias=torch.zeros(16, device=device, dtype=torch.bfloat16),
                         out_dtype=torch.bfloat16)
    except (RuntimeError, NotImplementedError, TypeError):
        return False
    return True


def _mm(x, x_scale, w, w_scale, bias=None, bias_in_mm: bool = False):
    """x @ w.T * scales (+ bias) in bf16 by torch._scaled_mm; the bias added after it unless
    `bias_in_mm` (scaled_mm_takes_bias, probed outside any compiled region)."""
    import torch

    sa, sb = _scales_2d(x_scale, w_scale, x.shape[0], w.shape[0])
    out = torch._scaled_mm(x, w.t(), scale_a=sa, scale_b=sb, bias=bias if bias_in_mm else None,
                           out_dtype=torch.bfloat16)
    return out + bias if bias is not None and not bias_in_mm else out


def bias_in_mm(inputs: dict) -> bool:
    """Whether scaled_mm hands the bias to torch._scaled_mm for these inputs."""
    bias = inputs.get("bias")
    rowwise = inputs["x_scale"].numel() > 1 or inputs["weight_scale"].numel() > 1 if bias is not None else False
    return bias is not None and scaled_mm_takes_bias(str(bias.device), rowwise)


def scaled_mm(case_op: str, bias_in_mm: bool = False, **inputs):
    """The op with torch._scaled_mm for every GEMM and the activation (and gating) in eager; a
    gated MLP's hidden is requantized per token between them, as gated_mlp_fp8's contract.
    bias_in_mm: give linear_act's bias to _scaled_mm (where it takes one, see bias_in_mm)."""
    from benchmarks.harness.fp8_quantize import quantize_unchecked
    from benchmarks.harness.numerics import activation_fn

    act = activation_fn(inputs["activation"])
    x, xs = inputs["x"], inputs["x_scale"]
    x2 = x.reshape(-1, x.shape[-1])
    if case_op == "linear_act":
        return act(_mm(x2, xs, inputs["weight"], inputs["weight_scale"], inputs.get("bias"), bias_in_mm))
    hidden = act(_mm(x2, xs, inputs["w_gate"], inputs["gate_scale"])) * _mm(x2, xs, inputs["w_up"], inputs["up_scale"])
    hq, hs = quantize_unchecked(hidden, "row", x.dtype)
    return _mm(hq, hs, inputs["w_down"], inputs["down_scale"])


@functools.cache
def compiled_scaled_mm(case_op: str):
    import torch

    return torch.compile(functools.partial(scaled_mm, case_op), dynamic=False)


@functools.cache
def scaled_mm_missing(device: str) -> str | None:
    """Why torch._scaled_mm cannot run on `device` (probed once), or None."""
    import torch

    from benchmarks.harness.fp8_quantize import w8a8_dtype

    if torch.device(device).type == "cuda" and not torch.cuda.is_available():
        return None  # a modelled GPU (suite_cost): nothing here to probe
    try:
        a = torch.ones(16, 32, device=device).to(w8a8_dtype(device))
        one = torch.ones((), device=device)
        torch._scaled_mm(a, a.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    except (RuntimeError, NotImplementedError, AttributeError) as e:
        return f"torch {torch.__version__} has no _scaled_mm on {device} ({str(e).splitlines()[0][:120]})"
    return None


def scaled_mm_unavailable(case, device: str) -> str | None:
    if not is_fp8(case.dtype):
        return f"scaled_mm runs the FP8 dtypes only ({', '.join(FP8_DTYPES)})"
    if form(case.dtype) != "w8a8":
        return "scaled_mm takes e4m3 x: W8A16 (bf16 x) has no _scaled_mm form"
    return scaled_mm_missing(device)


def peers(op: str) -> dict:
    """The op's FP8 peers (ops/<op>.py `peers`): torch._scaled_mm and its torch.compile."""
    def call(compiled: bool):
        def run(**inputs):
            fn = compiled_scaled_mm(op) if compiled else functools.partial(scaled_mm, op)
            return fn(bias_in_mm=op == "linear_act" and bias_in_mm(inputs), **inputs)
        return run

    return {SCALED_MM: Peer(call(False), scaled_mm_unavailable), SCALED_MM_COMPILE: Peer(call(True), scaled_mm_unavailable)}
