"""Hot latency of decode-size calls (M <= 16), per op: what a model's decode loop sees, beside
bench_ops' cold-L2 device time (harness/hot_timing.py says how each is measured).

asv names them bench_hot.<Class>Hot.<metric> with params (case, impl), both in seconds, lower is
better:
    track_graph_latency     device time per call, replayed from a CUDA graph of back-to-back calls
    track_launch_overhead   host time per call to issue back-to-back calls without a graph

Only the grid's decode cases are timed here; a grid without any, and the CPU smoke grid "tiny",
define no class, so a CPU run spends nothing on this module. Every output is checked against
the float64 reference before anything is timed; without CUDA every combination skips.
"""

import torch

from .common import grid_name
from .harness import hot_timing, implementations  # modules: asv takes track_* names
from .harness.grids import benchmarked_ops, grid
from .harness.ops import OPS
from .harness.references import mismatch, reference
from .harness.tensors import make_inputs, torch_dtype
from .harness.tolerances import tolerance
from .harness.workloads import Case

DECODE_M = 16  # rows per call at decode: one token per sequence, a small batch


def decode_cases(op: str, grid_name_: str) -> list[str]:
    """The grid's decode-size cases of `op` in the dtype, activation and shape of its first one
    (the model projection the grid is about, at each decode M); the other variants are bench_ops'
    alone, to keep this module's two processes per combination inside the GPU budget
    (benchmarks.suite_cost)."""
    decode = [c for c in grid(grid_name_)[op] if c.M <= DECODE_M]
    main = [(c.dtype, c.activation, c.K, c.N) for c in decode[:1]]
    return [c.key for c in decode if (c.dtype, c.activation, c.K, c.N) in main]


# The decode loop's question is fused against the unfused eager code; the compiled and peer
# implementations are left to bench_ops' cold timings (each combination here costs two processes).
HOT_IMPLEMENTATIONS = (implementations.FUSED, implementations.EAGER)


class _HotBenchmark:  # underscore: asv discovers only the concrete classes below
    op = ""
    hot = True  # benchmarks.suite_cost models these processes
    param_names = ["case", "impl"]
    timeout = 900
    samples = 50

    def setup(self, case_key: str, impl: str):
        case = Case.from_key(case_key)
        if not torch.cuda.is_available():
            raise NotImplementedError("hot latency (CUDA graph replay, launch overhead) needs a CUDA device")
        reason = implementations.unavailable_reason(case, impl, "cuda")
        if reason:
            raise NotImplementedError(reason)
        inputs = make_inputs(case, "cuda")
        with torch.inference_mode():
            self.call = implementations.prepare(case, impl, inputs)
            out = self.call()  # first call: compiles and autotunes, outside any graph
            problem = mismatch(out, reference(case, inputs), torch_dtype(case), tolerance=tolerance(case))
        if problem:
            raise AssertionError(f"{impl} computes a wrong result for {case.key}: {problem}")

    def track_graph_latency(self, case_key, impl):
        with torch.inference_mode():
            return {"samples": hot_timing.graph_replay_samples(self.call, samples=self.samples), "number": 1}

    track_graph_latency.unit = "seconds"

    def track_launch_overhead(self, case_key, impl):
        with torch.inference_mode():
            return {"samples": hot_timing.launch_overhead_samples(self.call, samples=self.samples), "number": 1}

    track_launch_overhead.unit = "seconds"


def _define_classes(name: str) -> list[str]:
    """One class per op with decode cases in grid ``name``: <benchmark_class>Hot. The CPU smoke
    grid ("tiny") gets none: every combination would skip (CUDA graphs), at two processes each."""
    defined = []
    if name == "tiny":
        return defined
    for op in benchmarked_ops():
        cases = decode_cases(op, name)
        if cases:
            cls_name = f"{OPS[op].benchmark_class}Hot"
            globals()[cls_name] = type(cls_name, (_HotBenchmark,), {
                "op": op, "params": [cases, [i for i in implementations.names(op) if i in HOT_IMPLEMENTATIONS]], "__module__": __name__,
                "__doc__": f"{op} at decode sizes: CUDA-graph replay and launch overhead per call."})
            defined.append(cls_name)
    return defined


HOT_CLASSES = _define_classes(grid_name())
