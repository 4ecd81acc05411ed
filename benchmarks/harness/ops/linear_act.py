"""linear_act's code: its float64 reference, eager code, and its peers' calls: cuBLASLt's own
bias+activation epilogue (torch._addmm_activation; CUDA only, on ROCm hipBLASLt's where torch
uses it; ReLU and tanh-GELU only; it trains only where torch's autograd has a formula for it,
which the peer probes) and the FP8 dtypes' scaled_mm.
"""

from __future__ import annotations

import functools

from benchmarks.harness import fp8_peers
from benchmarks.harness.ops._spec import OpCode
from benchmarks.harness.peer import Peer
from workload.case import Case
from workload.ops import linear_act

# cuBLASLt's epilogues: ReLU, and GELU with the tanh approximation (torch's CUDA fallback for
# use_gelu also uses tanh; its CPU path uses erf, one more reason this peer is CUDA-only).
CUBLASLT_ACTIVATIONS = {"relu": False, "gelu_tanh": True}  # name -> use_gelu


def cublaslt_linear_act(x, weight, bias=None, activation="gelu_tanh"):
    import torch

    if activation not in CUBLASLT_ACTIVATIONS:
        raise ValueError(f"activation={activation!r}: the cuBLASLt epilogue has only {sorted(CUBLASLT_ACTIVATIONS)}")
    x2 = x.reshape(-1, x.shape[-1])
    if bias is None:  # _addmm_activation needs a bias; a zero one keeps the math unchanged
        bias = torch.zeros(weight.shape[0], dtype=x.dtype, device=x.device)
    out = torch._addmm_activation(bias, x2, weight.t(), use_gelu=CUBLASLT_ACTIVATIONS[activation])
    return out.reshape(*x.shape[:-1], weight.shape[0])


def cublaslt_unavailable(case: Case, device: str) -> str | None:
    if case.activation not in CUBLASLT_ACTIVATIONS:
        return f"cublaslt has no {case.activation} epilogue (only {sorted(CUBLASLT_ACTIVATIONS)})"
    if device != "cuda":
        return "cublaslt needs a CUDA device"
    return hipblaslt_missing()


@functools.cache
def hipblaslt_missing() -> str | None:
    """On a ROCm build of torch the peer is hipBLASLt's bias+activation epilogue, which
    torch._addmm_activation reaches only with hipBLASLt as torch's BLAS library (ATen's addmm
    takes its Lt path on ROCm only then); otherwise rocBLAS and a separate activation run, which
    is not this peer. None on CUDA (cuBLASLt) and where hipBLASLt is reached."""
    import torch

    if not torch.version.hip:
        return None
    backend = torch.backends.cuda.preferred_blas_library()
    if backend != torch._C._BlasBackend.Cublaslt:
        return (f"cublaslt on ROCm is hipBLASLt's epilogue, and torch's BLAS library here is {backend.name} "
                "(torch.backends.cuda.preferred_blas_library()): torch._addmm_activation would run rocBLAS "
                "and a separate activation, not the peer")
    return None


@functools.cache
def cublaslt_no_backward() -> str | None:
    """Why torch cannot differentiate _addmm_activation, or None once it can (probed once,
    on the CPU: autograd formulas do not depend on the device)."""
    import torch

    bias, x = torch.zeros(2, requires_grad=True), torch.ones(1, 2, requires_grad=True)
    try:
        out = torch._addmm_activation(bias, x, torch.ones(2, 2), use_gelu=False)
        torch.autograd.grad(out.sum(), (x, bias))
    except RuntimeError as e:
        return f"cublaslt: torch's autograd cannot differentiate _addmm_activation ({str(e).splitlines()[0]})"
    return None


class LinearAct(OpCode, linear_act.LinearAct):
    peers = {"cublaslt": Peer(cublaslt_linear_act, cublaslt_unavailable, cublaslt_no_backward),
             **fp8_peers.peers("linear_act")}  # scaled_mm, scaled_mm_compile: the FP8 dtypes only

    def reference(self, x, weight, bias=None, activation="gelu_tanh"):
        from benchmarks.harness.numerics import activation_fn, f64

        y = f64(x) @ f64(weight).T
        if bias is not None:
            y = y + f64(bias)
        return activation_fn(activation)(y)

    def eager(self, x, weight, bias=None, activation="gelu_tanh"):
        from benchmarks.harness.numerics import F, activation_fn

        return activation_fn(activation)(F.linear(x, weight, bias))


OP = LinearAct()
