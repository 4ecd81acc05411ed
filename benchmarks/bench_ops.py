"""One asv class per op, timing every implementation over the op's Cases in the chosen grid
(FUSED_MLP_GRID). asv names the series bench_ops.<Class>.<metric> with params (case, impl):
track_latency (seconds, samples), track_peak_memory (bytes), track_kernels_per_call. All three
come from one measuring pass per case x implementation (common._CaseBenchmark).

Each class's name is its op's `benchmark_class` (harness/ops/<op>.py); a new op with a class
of its own gets one here (tests/test_asv_suite.py checks that every such op has one).
"""

from benchmarks.common import _CaseBenchmark


class LinearAct(_CaseBenchmark):
    """linear_act: act(x @ W.T + b) in one kernel, against eager, torch.compile and cuBLASLt's
    epilogue."""

    op = "linear_act"
    params = _CaseBenchmark.grid_params(op)


class GatedMLP(_CaseBenchmark):
    """gated_mlp: down(act(x @ Wg.T) * (x @ Wu.T)) in two kernels, against eager's five and
    torch.compile's four."""

    op = "gated_mlp"
    params = _CaseBenchmark.grid_params(op)


class NarrowMLP(_CaseBenchmark):
    """narrow_mlp: a whole MLP of widths <= 128 in one kernel, against a GEMM and an activation
    per layer."""

    op = "narrow_mlp"
    params = _CaseBenchmark.grid_params(op)
