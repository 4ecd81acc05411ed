"""Hot latency of decode-size calls (M <= 16), per op: what a model's decode loop sees, beside
bench_ops' cold-L2 device time (harness/hot_timing.py says how each is measured).

asv names them bench_hot.<Class>Hot.<metric> with params (case, impl), both in seconds, lower is
better:
    track_graph_latency     device time per call, replayed from a CUDA graph of back-to-back calls
    track_launch_overhead   host time per call to issue back-to-back calls without a graph

Both come from one measuring pass per case x implementation (common._MeasuredBenchmark, as
bench_ops' metrics do): the first metric's process builds the inputs, makes the first call
(compiles, autotuning), checks the output against the float64 reference, then captures and
replays the graph and times the launches; the other metric's process reads what it filed.

Only the grid's decode cases are timed; an op without any in the grid has no class. The CPU smoke
grid "tiny" has no decode case: there each op's tiny case stands in, so the tiny run lists both
metrics and records every combination as skipped with the reason (CUDA graphs need a CUDA
device), at the cost of a fork per metric.
"""

import torch

from benchmarks.common import Skipped, _MeasuredBenchmark, grid_name
from benchmarks.harness import hot_timing, implementations  # modules: asv takes track_* names
from workload.grids import grid

DECODE_M = 16  # rows per call at decode: one token per sequence, a small batch
SMOKE_GRID = "tiny"  # no decode case: its own cases stand in, so the pipeline runs (and skips on a CPU)
NO_CUDA = "hot latency (CUDA graph replay, launch overhead) needs a CUDA device"


def decode_cases(op: str, grid_name_: str) -> list[str]:
    """The grid's decode-size cases of `op` in the dtype, activation and shape of its first one
    (the model projection the grid is about, at each decode M); the other variants are bench_ops'
    alone, to keep this module inside the GPU budget (benchmarks.suite_cost). The smoke grid:
    its first case of the op."""
    cases = grid(grid_name_)[op]
    decode = cases[:1] if grid_name_ == SMOKE_GRID else [c for c in cases if c.M <= DECODE_M]
    main = [(c.dtype, c.activation, c.K, c.N) for c in decode[:1]]
    return [c.key for c in decode if (c.dtype, c.activation, c.K, c.N) in main]


# The decode loop's question is fused against the unfused eager code; the compiled and peer
# implementations are left to bench_ops' cold timings.
HOT_IMPLEMENTATIONS = (implementations.FUSED, implementations.EAGER)


class _HotBenchmark(_MeasuredBenchmark):  # underscore: asv discovers only the concrete classes below
    """One op's decode cases, fused and eager: CUDA-graph replay and launch overhead per call."""

    hot = True  # benchmarks.suite_cost models these classes' passes (hot_process_s)
    metrics = ("graph_latency", "launch_overhead")
    samples = 50  # replays of CALLS_PER_SAMPLE calls each, and as many host-timed bursts
    warmup = 3

    @classmethod
    def grid_params(cls, op: str):
        return decode_cases(op, grid_name()), [i for i in implementations.names(op) if i in HOT_IMPLEMENTATIONS]

    def measuring_device(self) -> str:
        if not torch.cuda.is_available():
            raise Skipped(NO_CUDA)
        return "cuda"

    def measure_metrics(self, call, impl, device):
        # The graph first: its capture needs the warm call the check made; the bursts after it
        # run the same call again without a graph.
        counts = {"samples": self.samples, "warmup": self.warmup}
        return {"graph_latency": {"samples": hot_timing.graph_replay_samples(call, **counts), "number": 1},
                "launch_overhead": {"samples": hot_timing.launch_overhead_samples(call, **counts), "number": 1}}

    def track_graph_latency(self, folder, *params):
        return self._metric("graph_latency")

    track_graph_latency.unit = "seconds"

    def track_launch_overhead(self, folder, *params):
        return self._metric("launch_overhead")

    track_launch_overhead.unit = "seconds"


class LinearActHot(_HotBenchmark):
    """linear_act at decode sizes: CUDA-graph replay and launch overhead per call."""

    op = "linear_act"
    params = _HotBenchmark.grid_params(op)


class GatedMLPHot(_HotBenchmark):
    """gated_mlp at decode sizes: CUDA-graph replay and launch overhead per call."""

    op = "gated_mlp"
    params = _HotBenchmark.grid_params(op)


class NarrowMLPHot(_HotBenchmark):
    """narrow_mlp at decode sizes: CUDA-graph replay and launch overhead per call."""

    op = "narrow_mlp"
    params = _HotBenchmark.grid_params(op)


# A class whose op has no decode case in this grid is removed: asv would list it with no
# combination to run.
HOT_CLASSES = [name for name in ("LinearActHot", "GatedMLPHot", "NarrowMLPHot") if globals()[name].params[0]]
for _name in {"LinearActHot", "GatedMLPHot", "NarrowMLPHot"} - set(HOT_CLASSES):
    del globals()[_name]
