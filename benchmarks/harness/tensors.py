"""The torch side of the workload vocabulary: torch dtypes, activations and a Case's inputs."""

from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F

from . import fp8
from .ops import RandomTensor
from .workloads import Case

TORCH_DTYPES: dict[str, torch.dtype] = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}

# The harness's own activations, for the eager baselines and the float64 references. Not
# fused_mlp's table on purpose: the control and the reference must not move when the library does.
ACTIVATION_FNS = {
    "none": lambda t: t,
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": partial(F.gelu, approximate="tanh"),
    "silu": F.silu,
}

__all__ = ["ACTIVATION_FNS", "F", "TORCH_DTYPES", "activation_fn", "f64", "make_inputs", "rounded", "torch_dtype"]


def activation_fn(name: str):
    if name not in ACTIVATION_FNS:
        raise ValueError(f"activation={name!r} is not supported; expected one of {sorted(ACTIVATION_FNS)}")
    return ACTIVATION_FNS[name]


def torch_dtype(case: Case) -> torch.dtype:
    if fp8.is_fp8(case.dtype):  # FP8 Cases compute into bf16
        return torch.bfloat16
    return TORCH_DTYPES[case.dtype]


def f64(t):
    """float64 on the tensor's own device (the CPU in tests, the GPU for real sizes). A float64
    tensor passes through as it is, so a float64 autograd reference (training.py) keeps its graph."""
    if t is None or t.dtype == torch.float64:
        return t
    return t.detach().double()


def rounded(t64, dtype: torch.dtype):
    """Round a float64 tensor to `dtype` and back: where an op stores an intermediate."""
    return t64.to(dtype).double()


def make_inputs(case: Case, device="cpu", seed: int = 0) -> dict:
    """Fresh random inputs for `case`, as keyword arguments of its op (and of every
    implementation of it); the same seed gives the same inputs."""
    if fp8.is_fp8(case.dtype):  # bf16 inputs, quantized to e4m3
        return fp8.make_inputs(case, device, seed)
    gen = torch.Generator(device=device).manual_seed(seed)
    dtype = torch_dtype(case)

    def build(value):
        if isinstance(value, RandomTensor):
            t = torch.randn(*value.shape, generator=gen, device=device, dtype=torch.float32)
            return (t / value.fan_in**0.5).to(dtype)
        if isinstance(value, list):
            return [build(v) for v in value]
        return value

    return {name: build(value) for name, value in case.spec.inputs(case).items()}
