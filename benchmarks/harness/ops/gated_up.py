"""gated_up's code: its float64 reference, eager code, and Liger-Kernel's peers: the fused
gate/up kernel (liger_mlp, SwiGLU, forward only on its own) and its elementwise GLU between two
GEMMs (liger_glu)."""

from __future__ import annotations

from benchmarks.harness import liger
from benchmarks.harness.ops._spec import OpCode
from benchmarks.harness.peer import Peer
from workload.ops import gated_up


class GatedUp(OpCode, gated_up.GatedUp):
    peers = {"liger_mlp": Peer(liger.mlp_gated_up, liger.mlp_unavailable, liger.mlp_gated_up_no_backward),
             "liger_glu": Peer(liger.glu_gated_up, liger.glu_unavailable)}

    def reference(self, x, w_gate, w_up, activation="gelu_tanh"):
        from benchmarks.harness.numerics import activation_fn, f64

        return activation_fn(activation)(f64(x) @ f64(w_gate).T) * (f64(x) @ f64(w_up).T)

    def eager(self, x, w_gate, w_up, activation="gelu_tanh"):
        from benchmarks.harness.numerics import F, activation_fn

        return activation_fn(activation)(F.linear(x, w_gate)) * F.linear(x, w_up)


OP = GatedUp()
