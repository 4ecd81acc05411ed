"""act(x @ W.T + b): fused vs eager, torch.compile and the cuBLASLt epilogue."""

from .common import _CaseBenchmark


class LinearAct(_CaseBenchmark):
    params = _CaseBenchmark.family_params("linear_act")
