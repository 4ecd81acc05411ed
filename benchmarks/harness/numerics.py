"""The torch side of the workload vocabulary that the op specs compute with: torch dtypes, the
harness's own activations, and the float64 helpers of the references.

It sits below the op registry (ops/<op>.py import it; it imports no op), so that tensors.py,
which builds a Case's inputs from its op's spec, can import the registry without a cycle.
"""

from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F

from workload import fp8_dtypes
from workload.case import Case

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

__all__ = ["ACTIVATION_FNS", "F", "TORCH_DTYPES", "activation_fn", "f64", "rounded", "torch_dtype"]


def activation_fn(name: str):
    if name not in ACTIVATION_FNS:
        raise ValueError(f"activation={name!r} is not supported; expected one of {sorted(ACTIVATION_FNS)}")
    return ACTIVATION_FNS[name]


def torch_dtype(case: Case) -> torch.dtype:
    if fp8_dtypes.is_fp8(case.dtype):  # FP8 Cases compute into bf16
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
