"""gated_up: act(x @ Wg.T) * (x @ Wu.T), the gated half of a GeGLU/SwiGLU MLP, in one kernel.

Timed inside gated_mlp (its first kernel), not on its own. Peers: Liger-Kernel's fused gate/up
kernel (liger_mlp, SwiGLU, forward only on its own) and its elementwise GLU between two GEMMs
(liger_glu).
"""

from __future__ import annotations

from benchmarks.harness import liger
from benchmarks.harness.ops._spec import OpSpec, Peer, RandomTensor


class GatedUp(OpSpec):
    name = "gated_up"
    summary = "act(x @ Wg.T) * (x @ Wu.T) in one kernel"
    order = 1
    peers = {"liger_mlp": Peer(liger.mlp_gated_up, liger.mlp_unavailable, liger.mlp_gated_up_no_backward),
             "liger_glu": Peer(liger.glu_gated_up, liger.glu_unavailable)}

    def flops(self, case):
        return 2 * 2 * case.M * case.K * case.N

    def min_elements(self, case):
        return case.M * case.K + 2 * case.N * case.K + case.M * case.N

    def inputs(self, case):
        return dict(x=RandomTensor((case.M, case.K)), w_gate=RandomTensor((case.N, case.K), fan_in=case.K),
                    w_up=RandomTensor((case.N, case.K), fan_in=case.K), activation=case.activation)

    def reference(self, x, w_gate, w_up, activation="gelu_tanh"):
        from benchmarks.harness.numerics import activation_fn, f64

        return activation_fn(activation)(f64(x) @ f64(w_gate).T) * (f64(x) @ f64(w_up).T)

    def eager(self, x, w_gate, w_up, activation="gelu_tanh"):
        from benchmarks.harness.numerics import F, activation_fn

        return activation_fn(activation)(F.linear(x, w_gate)) * F.linear(x, w_up)


OP = GatedUp()
