"""narrow_mlp's code: its float64 reference (every hidden layer stored in the input dtype,
as a framework MLP does), its eager code (one GEMM and one activation per layer) and the fused
call that packs the layers once."""

from __future__ import annotations

from benchmarks.harness.ops._spec import OpCode
from workload.ops import narrow_mlp


class NarrowMLP(OpCode, narrow_mlp.NarrowMLP):
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
