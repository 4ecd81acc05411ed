"""narrow_mlp: a whole MLP with every width <= 128 in one kernel (tiny-cuda-nn style).

Eager and torch.compile run one GEMM (and one activation) per layer, each round-tripping the
activations through device memory; the fused kernel reads x once and writes y once.
"""

from __future__ import annotations

from itertools import product

from benchmarks.harness.workloads import Case
from benchmarks.harness.ops._spec import OpSpec, RandomTensor


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

    def reference(self, x, weights, biases=None, activation="relu", output_activation=None):
        from benchmarks.harness.numerics import activation_fn, f64, rounded

        biases = biases if biases is not None else [None] * len(weights)
        h = f64(x)
        for i, (w, b) in enumerate(zip(weights, biases)):
            h = h @ f64(w).T + (0 if b is None else f64(b))
            if i < len(weights) - 1:
                # a framework MLP in that dtype stores every hidden layer's output in it
                h = rounded(activation_fn(activation)(h), x.dtype)
            else:
                h = activation_fn(output_activation or "none")(h)
        return h

    def eager(self, x, weights, biases=None, activation="relu", output_activation=None):
        from benchmarks.harness.numerics import F, activation_fn

        hidden_act, out_act = activation_fn(activation), activation_fn(output_activation or "none")
        biases = biases if biases is not None else [None] * len(weights)
        h = x
        for i, (w, b) in enumerate(zip(weights, biases)):
            h = F.linear(h, w, b)
            h = hidden_act(h) if i < len(weights) - 1 else out_act(h)
        return h

    def fused(self, library, inputs):
        """Packs the layers once, as a deployment does at load time, where the library offers
        that; else the plain call, which packs (or, in some older commits, looks up a cache) on
        every call. Not in training: the weights change every step, so packing is part of the
        step (and a graph built once by packing could not be backpropagated through twice)."""
        pack, run_packed = getattr(library, "pack_layers", None), getattr(library, "narrow_mlp_packed", None)
        training = any(w.requires_grad for w in inputs["weights"])
        if training or not (callable(pack) and callable(run_packed)):
            return super().fused(library, inputs)
        packed = pack(inputs["weights"], inputs["biases"])
        x, activation, output_activation = inputs["x"], inputs["activation"], inputs["output_activation"]
        if hasattr(packed, "widths"):  # a PackedMLP (from 2026-12)
            return lambda: run_packed(x, packed, activation, output_activation)
        # the first public form (2026-11-30): a (weights, biases) pair, and the MLP's in/out features
        packed_w, packed_b = packed
        in_features, out_features = inputs["weights"][0].shape[1], inputs["weights"][-1].shape[0]
        return lambda: run_packed(x, packed_w, packed_b, in_features, out_features, activation, output_activation)


OP = NarrowMLP()
