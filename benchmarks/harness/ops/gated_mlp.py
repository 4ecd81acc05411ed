"""gated_mlp's code: its float64 reference, eager code (five kernels: three GEMMs, the
activation, the multiply), and its peers: Liger-Kernel's LigerMLP (liger_mlp: gate/up GEMMs +
SiLU * up in one kernel, then the down GEMM; SwiGLU only), Liger's elementwise GLU between cuBLAS
GEMMs (liger_glu, as LigerSwiGLUMLP/LigerGEGLUMLP) and the FP8 dtypes' scaled_mm."""

from __future__ import annotations

from benchmarks.harness import fp8_peers, liger
from benchmarks.harness.ops._spec import OpCode
from benchmarks.harness.peer import Peer
from benchmarks.harness.ops.gated_up import OP as GATED_UP
from workload.ops import gated_mlp


class GatedMLP(OpCode, gated_mlp.GatedMLP):
    peers = {"liger_mlp": Peer(liger.mlp_gated_mlp, liger.mlp_unavailable),
             "liger_glu": Peer(liger.glu_gated_mlp, liger.glu_unavailable),
             **fp8_peers.peers("gated_mlp")}  # scaled_mm, scaled_mm_compile: the FP8 dtypes only

    def reference(self, x, w_gate, w_up, w_down, activation="gelu_tanh"):
        from benchmarks.harness.numerics import f64, rounded

        # the op stores the hidden activations in the input dtype between its two kernels
        hidden = rounded(GATED_UP.reference(x, w_gate, w_up, activation), x.dtype)
        return hidden @ f64(w_down).T

    def eager(self, x, w_gate, w_up, w_down, activation="gelu_tanh"):
        from benchmarks.harness.numerics import F

        return F.linear(GATED_UP.eager(x, w_gate, w_up, activation), w_down)


OP = GatedMLP()
