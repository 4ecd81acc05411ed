"""linear_act: act(x @ W.T + b), one GEMM with the bias and activation in its epilogue.

Peers: eager (F.linear, then the activation: 2 kernels), torch.compile, and cuBLASLt's own
bias+activation epilogue (torch._addmm_activation; CUDA only, on ROCm hipBLASLt's where torch
uses it; ReLU and tanh-GELU only; it
trains only where torch's autograd has a formula for it, which the peer probes).
"""

from __future__ import annotations

import functools
from itertools import product

from benchmarks.harness import fp8_peers
from benchmarks.harness.workloads import ACTIVATIONS, MODEL_PROJECTIONS, TOKENS, Case
from benchmarks.harness.ops._spec import OpSpec, Peer, RandomTensor

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


def _case(M, K, N, dtype="bf16", activation="gelu_tanh"):
    return Case("linear_act", M, K, N, dtype, activation, bias=True)


class LinearAct(OpSpec):
    name = "linear_act"
    summary = "act(x @ W.T + b) in one kernel"
    short_name = "linear"
    order = 0
    benchmark_class = "LinearAct"
    has_bias = True
    peers = {"cublaslt": Peer(cublaslt_linear_act, cublaslt_unavailable, cublaslt_no_backward),
             **fp8_peers.peers("linear_act")}  # scaled_mm, scaled_mm_compile: the FP8 dtypes only

    def flops(self, case):
        return 2 * case.M * case.K * case.N

    def min_elements(self, case):
        return case.M * case.K + case.N * case.K + case.M * case.N + (case.N if case.bias else 0)

    def inputs(self, case):
        return dict(x=RandomTensor((case.M, case.K)), weight=RandomTensor((case.N, case.K), fan_in=case.K),
                    bias=RandomTensor((case.N,)) if case.bias else None, activation=case.activation)

    def cases(self, grid):
        if grid == "tiny":
            return [_case(64, 128, 256, "fp32")]
        if grid == "quick":  # prefill on Llama's up projection (the default grid has decode)
            return [_case(8192, 4096, 14336)]
        if grid == "default":  # sized for the GPU budget (grids.py): every M on Llama's up projection,
            # and its down projection at decode and prefill, in bf16 with the tanh GELU (each new dtype
            # or activation compiles every autotune config of the kernel again, ~17 s: fp32, fp16, the
            # other activations and the seed GeGLU's projections are in full, that GeGLU itself in the
            # gated MLP's grid; the FP8 forms come from harness/fp8.py)
            up, down = MODEL_PROJECTIONS[2], MODEL_PROJECTIONS[3]
            cases = [_case(M, *up) for M in TOKENS]
            cases += [_case(M, *down) for M in (16, 8192)]
            return cases
        if grid == "full":
            return [_case(M, K, N, dtype, act) for M, (K, N), dtype, act
                    in product(TOKENS, MODEL_PROJECTIONS, ("bf16", "fp16", "fp32"), ACTIVATIONS)]
        return []

    def training_cases(self, grid):
        if grid == "tiny":
            return self.cases("tiny")
        if grid == "quick":  # the forward quick grid's case
            return self.cases("quick")
        if grid == "default":  # Llama-3-8B's up projection at prefill (sized for the GPU budget, grids.py)
            return [_case(8192, 4096, 14336)]
        if grid == "full":  # Llama-3-8B's up and down projections, prefill sizes
            return [_case(M, K, N) for M, (K, N) in product((4096, 8192), [(4096, 14336), (14336, 4096)])]
        return []

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
