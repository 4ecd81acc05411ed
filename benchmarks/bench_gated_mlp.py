"""GeGLU / SwiGLU MLPs: fused (2 kernels) vs eager (5) and torch.compile."""

from .common import _CaseBenchmark


class GatedMLP(_CaseBenchmark):
    params = _CaseBenchmark.family_params("gated_mlp")
