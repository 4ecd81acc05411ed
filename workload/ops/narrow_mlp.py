"""narrow_mlp: a whole MLP with every width <= 128 in one kernel (tiny-cuda-nn style).

Eager and torch.compile run one GEMM (and one activation) per layer, each round-tripping the
activations through device memory; the fused kernel reads x once and writes y once.
"""

from __future__ import annotations

from itertools import product

from workload.case import Case
from workload.ops._spec import OpSpec, RandomTensor


def _case(rows, width, layers, dtype):
    return Case.from_widths("narrow_mlp", rows, (width,) * (layers + 1), dtype, "relu")


class NarrowMLP(OpSpec):
    name = "narrow_mlp"
    summary = "a whole MLP of widths <= 128 in one kernel"
    short_name = "narrow"
    order = 3
    benchmark_class = "NarrowMLP"
    has_bias = True
    layered = True

    def flops(self, case):
        return sum(2 * case.M * i * o for i, o in case.layer_pairs)

    def min_elements(self, case):
        weights = sum(i * o + (o if case.bias else 0) for i, o in case.layer_pairs)
        return case.M * case.widths[0] + case.M * case.widths[-1] + weights

    def output_features(self, case):
        return case.widths[-1]

    def inputs(self, case):
        pairs = case.layer_pairs
        return dict(x=RandomTensor((case.M, case.K)),
                    weights=[RandomTensor((o, i), fan_in=i) for i, o in pairs],
                    biases=[RandomTensor((o,)) for _, o in pairs] if case.bias else None,
                    activation=case.activation, output_activation=None)

    def cases(self, grid):
        if grid == "tiny":
            return [_case(1024, 32, 4, "fp32")]
        if grid == "quick":  # bf16, as the other ops' quick cases: one backward matmul kernel for all
            return [_case(2**21, 64, 5, "bf16")]
        if grid == "default":
            return [_case(2**21, 64, 5, "fp16"), _case(2**21, 128, 5, "fp16"), _case(2**18, 32, 4, "fp16"),
                    _case(2**20, 64, 8, "bf16")]  # bf16 at width 128: in full (sized for the GPU budget, grids.py)
        if grid == "full":
            return [_case(rows, width, layers, dtype) for rows, width, layers, dtype
                    in product((2**18, 2**20, 2**21), (32, 64, 128), (4, 5, 8), ("fp16", "bf16"))]
        return []

    def training_cases(self, grid):
        if grid == "tiny":
            return self.cases("tiny")
        if grid == "quick":
            return self.cases("quick")
        if grid in ("default", "full"):  # a NeRF-style MLP trained in bf16
            return [_case(2**20, 64, 8, "bf16")]
        return []


OP = NarrowMLP()
