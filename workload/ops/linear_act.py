"""linear_act: act(x @ W.T + b), one GEMM with the bias and activation in its epilogue.

Peers: eager (F.linear, then the activation: 2 kernels), torch.compile, and cuBLASLt's own
bias+activation epilogue (torch._addmm_activation; CUDA only, on ROCm hipBLASLt's where torch
uses it; ReLU and tanh-GELU only; it
trains only where torch's autograd has a formula for it, which the peer probes).
"""

from __future__ import annotations

from itertools import product

from workload.case import ACTIVATIONS, MODEL_PROJECTIONS, TOKENS, Case
from workload.fp8_dtypes import FP8_PEERS
from workload.ops._spec import OpSpec, RandomTensor


def _case(M, K, N, dtype="bf16", activation="gelu_tanh"):
    return Case("linear_act", M, K, N, dtype, activation, bias=True)


class LinearAct(OpSpec):
    name = "linear_act"
    summary = "act(x @ W.T + b) in one kernel"
    short_name = "linear"
    order = 0
    benchmark_class = "LinearAct"
    has_bias = True
    peer_names = ("cublaslt", *FP8_PEERS)  # FP8_PEERS: the FP8 dtypes only

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


OP = LinearAct()
