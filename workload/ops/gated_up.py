"""gated_up: act(x @ Wg.T) * (x @ Wu.T), the gated half of a GeGLU/SwiGLU MLP, in one kernel.

Timed inside gated_mlp (its first kernel), not on its own. Peers: Liger-Kernel's fused gate/up
kernel (liger_mlp, SwiGLU, forward only on its own) and its elementwise GLU between two GEMMs
(liger_glu).
"""

from __future__ import annotations

from workload.ops._spec import OpSpec, RandomTensor


class GatedUp(OpSpec):
    name = "gated_up"
    summary = "act(x @ Wg.T) * (x @ Wu.T) in one kernel"
    order = 1
    peer_names = ("liger_mlp", "liger_glu")

    def flops(self, case):
        return 2 * 2 * case.M * case.K * case.N

    def min_elements(self, case):
        return case.M * case.K + 2 * case.N * case.K + case.M * case.N

    def inputs(self, case):
        return dict(x=RandomTensor((case.M, case.K)), w_gate=RandomTensor((case.N, case.K), fan_in=case.K),
                    w_up=RandomTensor((case.N, case.K), fan_in=case.K), activation=case.activation)


OP = GatedUp()
