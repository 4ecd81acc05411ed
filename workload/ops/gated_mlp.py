"""gated_mlp: down(act(x @ Wg.T) * (x @ Wu.T)), the GeGLU/SwiGLU MLP: two fused kernels.

Eager launches five (three GEMMs, the activation, the multiply), as in the seed article;
torch.compile fuses the activation and the multiply into one (four). Peers: Liger-Kernel's
LigerMLP (liger_mlp: gate/up GEMMs + SiLU * up in one kernel, then the down GEMM; SwiGLU only)
and Liger's elementwise GLU between cuBLAS GEMMs (liger_glu, as LigerSwiGLUMLP/LigerGEGLUMLP).
"""

from __future__ import annotations

from itertools import product

from workload.case import TOKENS, Case
from workload.fp8_dtypes import FP8_PEERS
from workload.ops._spec import OpSpec, RandomTensor
from workload.ops.gated_up import OP as GATED_UP


class GatedMLP(OpSpec):
    name = "gated_mlp"
    summary = "down(act(x @ Wg.T) * (x @ Wu.T)) in two kernels"
    short_name = "gated"
    order = 2
    benchmark_class = "GatedMLP"
    peer_names = ("liger_mlp", "liger_glu", *FP8_PEERS)  # FP8_PEERS: the FP8 dtypes only

    def flops(self, case):
        return 3 * 2 * case.M * case.K * case.N

    def min_elements(self, case):
        return case.M * case.K + 3 * case.N * case.K + case.M * case.K

    def output_features(self, case):
        return case.K

    def inputs(self, case):
        return {**GATED_UP.inputs(case), "w_down": RandomTensor((case.K, case.N), fan_in=case.N)}

    def cases(self, grid):
        if grid == "tiny":
            return [Case("gated_mlp", 64, 128, 256, "fp32", "silu")]
        if grid == "quick":
            return [Case("gated_mlp", 8192, 768, 3072, "bf16", "gelu_tanh")]
        if grid == "default":
            return [
                Case("gated_mlp", 8192, 768, 3072, "bf16", "gelu_tanh"),  # the seed article's GeGLU
                Case("gated_mlp", 8192, 4096, 14336, "bf16", "silu"),  # Llama-style SwiGLU, prefill
                Case("gated_mlp", 16, 4096, 14336, "bf16", "silu"),  # ... and decode
            ]
        if grid == "full":
            return [Case("gated_mlp", M, K, N, dtype, act) for M, (K, N, act), dtype
                    in product(TOKENS, [(768, 3072, "gelu_tanh"), (4096, 14336, "silu")], ("bf16", "fp16"))]
        return []

    def training_cases(self, grid):
        if grid == "tiny":
            return self.cases("tiny")
        if grid == "quick":  # the seed GeGLU: small GEMMs, a short autotune (liger_glu runs, liger_mlp skips)
            return self.cases("quick")
        if grid == "default":  # sized for the GPU budget (grids.py): the seed GeGLU trains in `full`
            return [Case("gated_mlp", 8192, 4096, 14336, "bf16", "silu")]  # Llama-3-8B's SwiGLU (liger_mlp runs)
        if grid == "full":
            return [Case("gated_mlp", 8192, 768, 3072, "bf16", "gelu_tanh"),  # the seed article's GeGLU
                    Case("gated_mlp", 4096, 4096, 14336, "bf16", "silu"),  # Llama-3-8B's SwiGLU
                    Case("gated_mlp", 8192, 4096, 14336, "bf16", "silu")]
        return []


OP = GatedMLP()
