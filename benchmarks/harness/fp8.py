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

The torch-free part (dtypes, bytes) is what the dashboard reads; torch is imported inside the
functions that need it.
"""

from __future__ import annotations

import functools

# dtype -> (form, granularity of the scales)
FP8_DTYPES = {"fp8": ("w8a8", "row"), "fp8_tensor": ("w8a8", "tensor"), "w8a16": ("w8a16", "row")}
# Bytes of x's elements (Case.itemsize); the weights are 1 byte, the bf16 output and bias 2.
X_BYTES = {"fp8": 1, "fp8_tensor": 1, "w8a16": 2}
OUT_BYTES = 2
SCALE_BYTES = 4
# The matmul roof each dtype runs on: FP8 tensor cores for W8A8, bf16's for W8A16 (its weights
# are up-cast to bf16 before the dot).
ROOF_DTYPE = {"fp8": "fp8", "fp8_tensor": "fp8", "w8a16": "bf16"}
FP8_OPS = {"linear_act": "linear_act_fp8", "gated_mlp": "gated_mlp_fp8"}  # suite op -> fused_mlp function
SCALED_MM, SCALED_MM_COMPILE = "scaled_mm", "scaled_mm_compile"
# What an FP8 Case is run by; every other implementation (cuBLASLt's bf16 epilogue, Liger,
# max-autotune) has no FP8 form and skips.
FP8_IMPLEMENTATIONS = ("fused", "eager", "compile", SCALED_MM, SCALED_MM_COMPILE)
# The stored hidden of a W8A8 gated MLP is e4m3 (per-token requantized): implementations that
# round the bf16 hidden differently (eager's bf16 gate and up) re-round some of its elements by
# one e4m3 step, so their results agree to e4m3's unit roundoff (2^-4), not bf16's.
E4M3_UNIT_ROUNDOFF = 2.0**-4
WEIGHT_NAMES = {"linear_act": ("weight",), "gated_mlp": ("w_gate", "w_up", "w_down")}
SCALE_NAMES = {"weight": "weight_scale", "w_gate": "gate_scale", "w_up": "up_scale", "w_down": "down_scale"}


def is_fp8(dtype: str) -> bool:
    return dtype in FP8_DTYPES


def form(dtype: str) -> str:
    return FP8_DTYPES[dtype][0]


def granularity(dtype: str) -> str:
    return FP8_DTYPES[dtype][1]


def min_bytes(case) -> int:
    """What a perfect FP8 kernel moves: x at X_BYTES, every weight at one byte per element, the
    bias and output in bf16, and the fp32 scales."""
    from .ops import RandomTensor, output_features, spec_of

    inputs = spec_of(case).inputs(case)
    total = case.M * output_features(case) * OUT_BYTES
    rows = 1 if granularity(case.dtype) == "tensor" else None
    for name, value in inputs.items():
        if not isinstance(value, RandomTensor):
            continue
        elements = 1
        for size in value.shape:
            elements *= size
        if name == "x":
            total += elements * X_BYTES[case.dtype]
            if form(case.dtype) == "w8a8":
                total += (rows or value.shape[0]) * SCALE_BYTES
        elif name == "bias":
            total += elements * OUT_BYTES
        else:
            total += elements + (rows or value.shape[0]) * SCALE_BYTES
    return total


def storage_tolerance(case) -> float:
    """The storage term of the Case's tolerance (harness.tolerances): the bf16 output's, or
    e4m3's where a W8A8 gated MLP stores its hidden in e4m3."""
    if case.op == "gated_mlp" and form(case.dtype) == "w8a8":
        return E4M3_UNIT_ROUNDOFF
    return 1e-2  # bf16 out, as tolerances.STORAGE["bf16"]


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
    """Why a CUDA `device` cannot run e4m3 GEMMs (below sm_89), or None (and None off CUDA: the
    interpreter and the CPU's _scaled_mm compute e4m3)."""
    import torch

    if torch.device(device).type != "cuda" or not torch.cuda.is_available():  # not here: a modelled one (suite_cost)
        return None
    major, minor = torch.cuda.get_device_capability(device)
    if 10 * major + minor < 89:
        return f"W8A8 needs FP8 tensor cores (sm_89 or newer); this GPU is sm_{major}{minor}"
    return None


def make_inputs(case, device="cpu", seed: int = 0) -> dict:
    """The Case's inputs as bf16 random tensors (the op's own), then quantized: every weight to
    e4m3 with its scales, and x too for W8A8."""
    import dataclasses

    from .fp8_quantize import quantize
    from .tensors import make_inputs as make_float_inputs

    inputs = make_float_inputs(dataclasses.replace(case, dtype="bf16"), device, seed)
    g = granularity(case.dtype)
    for name in WEIGHT_NAMES[case.op]:
        inputs[name], inputs[SCALE_NAMES[name]] = quantize(inputs[name], g)
    if form(case.dtype) == "w8a8":
        inputs["x"], inputs["x_scale"] = quantize(inputs["x"], g)
    else:
        inputs["x_scale"] = None
    return inputs


def dequantized(inputs: dict, dtype) -> dict:
    """The op's float inputs (x, weights, bias, activation) with every e4m3 tensor dequantized."""
    from .fp8_quantize import dequantize

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

    from .fp8_quantize import dequantize, quantize
    from .ops import OPS
    from .tensors import rounded

    plain = dequantized(inputs, torch.float64)
    if case.op == "linear_act":
        return OPS["linear_act"].reference(**plain)
    hidden = rounded(OPS["gated_up"].reference(plain["x"], plain["w_gate"], plain["w_up"], plain["activation"]),
                     torch.bfloat16)
    if form(case.dtype) == "w8a8":
        hidden = dequantize(*quantize(hidden.to(torch.bfloat16), "row"), torch.float64)
    return hidden @ plain["w_down"].T


def eager(case_op: str, **inputs):
    """Without FP8 kernels: dequantize to bf16, then the op's eager code (a W8A8 gated MLP
    requantizes its hidden per token, as its contract says)."""
    import torch

    from .fp8_quantize import dequantize, quantize
    from .ops import OPS

    plain = dequantized(inputs, torch.bfloat16)
    if case_op == "linear_act":
        return OPS["linear_act"].eager(**plain)
    hidden = OPS["gated_up"].eager(plain["x"], plain["w_gate"], plain["w_up"], plain["activation"])
    if inputs.get("x_scale") is not None:
        hidden = dequantize(*quantize(hidden, "row"), torch.bfloat16)
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


def fused_missing(case, library) -> str | None:
    if not callable(getattr(library, FP8_OPS[case.op], None)):
        return f"fused_mlp at this commit has no public {FP8_OPS[case.op]}()"
    return None


# torch._scaled_mm ------------------------------------------------------------------------


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

    a = torch.ones(16, 32, device=device).to(torch.float8_e4m3fn)
    b = torch.ones(16, 32, device=device).to(torch.float8_e4m3fn)
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
    from .fp8_quantize import quantize_unchecked
    from .tensors import activation_fn

    act = activation_fn(inputs["activation"])
    x, xs = inputs["x"], inputs["x_scale"]
    x2 = x.reshape(-1, x.shape[-1])
    if case_op == "linear_act":
        return act(_mm(x2, xs, inputs["weight"], inputs["weight_scale"], inputs.get("bias"), bias_in_mm))
    hidden = act(_mm(x2, xs, inputs["w_gate"], inputs["gate_scale"])) * _mm(x2, xs, inputs["w_up"], inputs["up_scale"])
    hq, hs = quantize_unchecked(hidden, "row")
    return _mm(hq, hs, inputs["w_down"], inputs["down_scale"])


@functools.cache
def compiled_scaled_mm(case_op: str):
    import torch

    return torch.compile(functools.partial(scaled_mm, case_op), dynamic=False)


@functools.cache
def scaled_mm_missing(device: str) -> str | None:
    """Why torch._scaled_mm cannot run on `device` (probed once), or None."""
    import torch

    if torch.device(device).type == "cuda" and not torch.cuda.is_available():
        return None  # a modelled GPU (suite_cost): nothing here to probe
    try:
        a = torch.ones(16, 32, device=device).to(torch.float8_e4m3fn)
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


def cases(op: str, grid: str) -> list:
    """The FP8 Cases of grid `grid` for suite op `op` (grids.grid adds them to the op's own).

    tiny: one small case per form (CPU). quick: decode W8A16 and prefill W8A8 of Llama-3-8B's
    up projection. default: Llama-3-8B's up and down projections at decode (1, 16 tokens) and
    prefill (8192), its SwiGLU MLP at 16 and 8192 tokens and the seed GeGLU, per form. full:
    every token count and projection, and the per-tensor scales too.
    """
    from itertools import product

    from .workloads import ACTIVATIONS, MODEL_PROJECTIONS, TOKENS, Case

    forms = ("fp8", "w8a16")
    if op == "linear_act":
        def case(M, K, N, dtype, act="gelu_tanh"):
            return Case("linear_act", M, K, N, dtype, act, bias=True)
        if grid == "tiny":
            return [case(16, 64, 96, dtype, "silu") for dtype in forms]
        if grid == "quick":
            return [case(16, 4096, 14336, "w8a16"), case(8192, 4096, 14336, "fp8")]
        if grid == "default":
            return [case(M, K, N, dtype) for dtype, M, (K, N) in product(forms, (1, 16, 8192), [(4096, 14336), (14336, 4096)])]
        if grid == "full":
            return [case(M, K, N, dtype, act) for dtype, M, (K, N), act
                    in product((*forms, "fp8_tensor"), TOKENS, MODEL_PROJECTIONS, ACTIVATIONS)]
    if op == "gated_mlp":
        if grid == "tiny":
            return [Case("gated_mlp", 16, 64, 96, dtype, act) for dtype, act in zip(forms, ("gelu_tanh", "silu"))]
        if grid == "default":
            return [Case("gated_mlp", M, K, N, dtype, act) for dtype, (M, K, N, act) in product(forms, [
                (8192, 768, 3072, "gelu_tanh"),  # the seed article's GeGLU
                (16, 4096, 14336, "silu"), (8192, 4096, 14336, "silu")])]  # Llama-3-8B's SwiGLU
        if grid == "full":
            return [Case("gated_mlp", M, K, N, dtype, act) for M, (K, N, act), dtype
                    in product(TOKENS, [(768, 3072, "gelu_tanh"), (4096, 14336, "silu")], (*forms, "fp8_tensor"))]
    return []


def peers(op: str) -> dict:
    """The op's FP8 peers (ops/<op>.py `peers`): torch._scaled_mm and its torch.compile."""
    from .ops._spec import Peer

    def call(compiled: bool):
        def run(**inputs):
            fn = compiled_scaled_mm(op) if compiled else functools.partial(scaled_mm, op)
            return fn(bias_in_mm=op == "linear_act" and bias_in_mm(inputs), **inputs)
        return run

    return {SCALED_MM: Peer(call(False), scaled_mm_unavailable), SCALED_MM_COMPILE: Peer(call(True), scaled_mm_unavailable)}


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

    from . import timing

    a = torch.randn(n, n, device=device).to(torch.float8_e4m3fn)
    b = torch.randn(n, n, device=device).to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm wants
    one = torch.ones((), device=device)
    return timing.latency_samples(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                                  device, samples, warmup=3)
