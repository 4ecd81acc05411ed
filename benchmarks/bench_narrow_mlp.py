"""Narrow MLPs (widths <= 128): one fused kernel vs eager and torch.compile."""

from .common import _CaseBenchmark


class NarrowMLP(_CaseBenchmark):
    params = _CaseBenchmark.family_params("narrow_mlp")
