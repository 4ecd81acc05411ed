"""The suite's FP8 dtypes: what a Case of dtype fp8 / fp8_tensor / w8a16 is, costs and runs.

    fp8         W8A8: e4m3 x (one scale per token) and e4m3 weights (one per output channel)
    fp8_tensor  W8A8 with one scale per tensor for x and for each weight (the `full` grid)
    w8a16       weight-only: bf16 x, e4m3 weights (one scale per output channel)

Every FP8 Case computes in bf16 out (fp32 accumulation). Its inputs are bf16 random tensors
quantized once (quantize_fp8), so every implementation sees the same e4m3 bytes and scales; the
float64 reference is computed from the DEQUANTIZED inputs (it judges the implementation, not the
quantization: tools/measure_fp8_error.py measures that). The implementations of an FP8 Case:

    fused              fused_mlp's linear_act_fp8 / gated_mlp_fp8 (commits without them skip)
    eager, compile     dequantize to bf16 + F.linear + activation (what runs without FP8 kernels)
    scaled_mm          torch._scaled_mm (+ bias where it takes one) + the activation in eager
    scaled_mm_compile  torch.compile of scaled_mm (W8A8 only, as scaled_mm)

The torch-free vocabulary (dtypes, bytes, roofs) is fp8_dtypes.py, what workloads.py, cost.py
and the dashboard read; the quantized inputs are fp8_quantize.quantize_inputs (tensors.make_inputs
calls it). Here torch is imported inside the functions that need it.
"""

from __future__ import annotations

import functools

# The vocabulary (fp8_dtypes.py) and the scaled_mm peers (fp8_peers.py) live below the op
# registry so that it can import them; their names are re-exported here, the FP8 module's face.
from workload.fp8_dtypes import (FP8_DTYPES, FP8_IMPLEMENTATIONS, FP8_OPS, SCALE_NAMES, SCALED_MM,  # noqa: F401
                         SCALED_MM_COMPILE, form, is_fp8)
from benchmarks.harness.fp8_peers import bias_in_mm, compiled_scaled_mm, scaled_mm, scaled_mm_missing  # noqa: F401

def unavailable(case, impl: str, device="cpu") -> str | None:
    """Why `impl` cannot run `case` on `device` for FP8 reasons, or None (then the usual checks
    follow): no FP8 form, or W8A8's e4m3 GEMMs on a GPU without FP8 tensor cores."""
    if is_fp8(case.dtype):
        if impl not in FP8_IMPLEMENTATIONS:
            return f"{impl} has no FP8 ({case.dtype}) form"
        if form(case.dtype) == "w8a8" and impl not in ("eager", "compile"):
            return fp8_tensor_cores_missing(str(device))
        return None
    if impl in (SCALED_MM, SCALED_MM_COMPILE):
        return f"{impl} runs the FP8 dtypes only ({', '.join(FP8_DTYPES)})"
    return None


# ---------------------------------------------------------------------------- torch side


@functools.cache
def fp8_tensor_cores_missing(device: str) -> str | None:
    """Why a CUDA `device` cannot run e4m3 GEMMs (below sm_89; an AMD GPU without FP8 MFMAs), or
    None (and None off CUDA: the interpreter and the CPU's _scaled_mm compute e4m3)."""
    import torch

    from benchmarks.harness.fp8_quantize import FNUZ_GFX, OCP_FP8_GFX, amd_gfx

    if torch.device(device).type != "cuda" or not torch.cuda.is_available():  # not here: a modelled one (suite_cost)
        return None
    if torch.version.hip:  # ROCm reports capability 9.4 for an MI300: the gfx name says what it computes
        gfx = amd_gfx(device)
        if gfx in FNUZ_GFX + OCP_FP8_GFX:
            return None
        return f"W8A8 needs FP8 MFMAs (MI300 {', '.join(FNUZ_GFX)}, MI355X {', '.join(OCP_FP8_GFX)}); this GPU is {gfx}"
    major, minor = torch.cuda.get_device_capability(device)
    if 10 * major + minor < 89:
        return f"W8A8 needs FP8 tensor cores (sm_89 or newer); this GPU is sm_{major}{minor}"
    return None


def dequantized(inputs: dict, dtype) -> dict:
    """The op's float inputs (x, weights, bias, activation) with every e4m3 tensor dequantized."""
    from benchmarks.harness.fp8_quantize import dequantize

    out = {}
    scales = set(SCALE_NAMES.values()) | {"x_scale"}
    for name, value in inputs.items():
        if name in scales:
            continue
        if name in SCALE_NAMES:
            value = dequantize(value, inputs[SCALE_NAMES[name]], dtype)
        elif name == "x" and inputs.get("x_scale") is not None:
            value = dequantize(value, inputs["x_scale"], dtype)
        out[name] = value
    return out


def reference(case, inputs: dict):
    """float64 from the dequantized inputs, rounding where the op's contract stores: a gated
    MLP's hidden in bf16, and for W8A8 then quantized per token to e4m3."""
    import torch

    from benchmarks.harness.fp8_quantize import dequantize, quantize
    from benchmarks.harness.ops import OPS
    from benchmarks.harness.tensors import rounded

    plain = dequantized(inputs, torch.float64)
    if case.op == "linear_act":
        return OPS["linear_act"].reference(**plain)
    hidden = rounded(OPS["gated_up"].reference(plain["x"], plain["w_gate"], plain["w_up"], plain["activation"]),
                     torch.bfloat16)
    if form(case.dtype) == "w8a8":
        hidden = dequantize(*quantize(hidden.to(torch.bfloat16), "row", inputs["x"].dtype), torch.float64)
    return hidden @ plain["w_down"].T


def eager(case_op: str, **inputs):
    """Without FP8 kernels: dequantize to bf16, then the op's eager code (a W8A8 gated MLP
    requantizes its hidden per token, as its contract says)."""
    import torch

    from benchmarks.harness.fp8_quantize import dequantize, quantize
    from benchmarks.harness.ops import OPS

    plain = dequantized(inputs, torch.bfloat16)
    if case_op == "linear_act":
        return OPS["linear_act"].eager(**plain)
    hidden = OPS["gated_up"].eager(plain["x"], plain["w_gate"], plain["w_up"], plain["activation"])
    if inputs.get("x_scale") is not None:
        hidden = dequantize(*quantize(hidden, "row", inputs["x"].dtype), torch.bfloat16)
    return torch.nn.functional.linear(hidden, plain["w_down"])


@functools.cache
def compiled_eager(case_op: str):
    import torch

    return torch.compile(functools.partial(eager, case_op), dynamic=False)


def fused_call(case, library, inputs: dict):
    """A zero-argument call of the library's FP8 op on `inputs` (the scales are quantize_fp8's,
    known good: no per-call read-back of them)."""
    fn = getattr(library, FP8_OPS[case.op], None)
    if not callable(fn):
        raise NotImplementedError(f"fused_mlp at this commit has no public {FP8_OPS[case.op]}()")
    x_scale = inputs.get("x_scale")
    kwargs = {k: v for k, v in inputs.items() if k != "x_scale"}
    return lambda: fn(**kwargs, x_scale=x_scale, check_scales=False)


def fused_missing(case, library, device="cpu") -> str | None:
    from benchmarks.harness.fp8_quantize import E4M3FNUZ, w8a8_dtype

    if not callable(getattr(library, FP8_OPS[case.op], None)):
        return f"fused_mlp at this commit has no public {FP8_OPS[case.op]}()"
    # The library takes e4m3fnuz from the commit that gives native_fp8_dtype on
    if form(case.dtype) == "w8a8" and w8a8_dtype(device) == E4M3FNUZ and not hasattr(library, "native_fp8_dtype"):
        return "fused_mlp at this commit takes no e4m3fnuz, the only FP8 an MI300's MFMAs take"
    return None


def prepare(case, impl: str, inputs: dict, library):
    """A zero-argument call of `impl` on an FP8 Case's fixed inputs (forward only)."""
    if impl == "fused":
        return fused_call(case, library, inputs)
    if impl in (SCALED_MM, SCALED_MM_COMPILE):
        fn = functools.partial(scaled_mm, case.op) if impl == SCALED_MM else compiled_scaled_mm(case.op)
        in_mm = case.op == "linear_act" and bias_in_mm(inputs)
        return lambda: fn(bias_in_mm=in_mm, **inputs)
    fn = functools.partial(eager, case.op) if impl == "eager" else compiled_eager(case.op)
    return lambda: fn(**inputs)


def matmul_missing(device) -> str | None:
    """Why `device` has no FP8 matmul ceiling to measure (no CUDA, no FP8 tensor cores), or None."""
    import torch

    if torch.device(device).type != "cuda":
        return "the FP8 matmul ceiling is measured on a GPU with FP8 tensor cores"
    return fp8_tensor_cores_missing(str(torch.device(device))) or scaled_mm_missing(str(torch.device(device)))


def matmul_samples(device, n: int, samples: int = 20) -> list[float]:
    """Seconds per dense n x n x n e4m3 matmul (torch._scaled_mm, tensor-wise scales, bf16 out):
    the FP8 roof of the roofline."""
    import torch

    from benchmarks.harness import timing

    from benchmarks.harness.fp8_quantize import w8a8_dtype

    e4m3 = w8a8_dtype(device)
    a = torch.randn(n, n, device=device).to(e4m3)
    b = torch.randn(n, n, device=device).to(e4m3).t()  # column-major, as _scaled_mm wants
    one = torch.ones((), device=device)
    return timing.latency_samples(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                                  device, samples, warmup=3)
