"""The machinery every op's benchmark class shares: which grid runs, the per-case setup (inputs,
correctness gate, warm-up) and the metrics.

Import stays cheap: no CUDA initialisation and no tensors at module level (asv imports the suite
for discovery on machines without a GPU, and forkserver forks after import). fused_mlp itself is
imported only when a fused case is set up (`harness.implementations.library`).
"""

import os

import torch

from .harness import cost, implementations, timing  # modules, not names: asv takes any time_*/track_* name in the suite for a benchmark
from .harness.grids import GRID_ENV, GRIDS, grid
from .harness.references import mismatch, reference
from .harness.tensors import make_inputs, torch_dtype
from .harness.workloads import Case

# Largest case the CPU smoke run attempts; the default grid's big shapes skip on a CPU.
CPU_MAX_FLOPS = 2e9


def grid_name() -> str:
    name = os.environ.get(GRID_ENV, "default")
    if name not in GRIDS:
        raise ValueError(f"{GRID_ENV}={name!r} is not a grid; expected one of {list(GRIDS)}")
    return name


def skip(reason: str):
    """Skip from inside a benchmark body (asv records NaN); setup() raises NotImplementedError."""
    try:
        from asv_runner.benchmarks.mark import SkipNotImplemented
    except ImportError:  # outside asv
        raise NotImplementedError(reason) from None
    raise SkipNotImplemented(reason)


class _CaseBenchmark:  # underscore: asv discovers only the concrete classes (bench_ops.py)
    """One op's Cases: params = (case key, implementation); subclasses set `op` and `params`.

    setup() refuses what cannot run here (skip = NaN) and checks the implementation's output
    against the float64 reference before anything is timed: a wrong result raises, so asv
    records a failure (null), never a time.
    """

    op = ""
    param_names = ["case", "impl"]
    timeout = 900  # one process per combination: import, CUDA init, Triton/Inductor compile, samples
    version = "1"  # bump when what a metric means changes; old results are then set apart
    samples = 100
    warmup = 25  # the first samples after a short warm-up were outliers on the H200
    # Triton's CPU interpreter (TRITON_INTERPRET=1) takes ~0.3 s per call of a tiny case: a few
    # samples show the pipeline works; they are not a performance number.
    interpreter_samples = 5

    @classmethod
    def grid_params(cls, op: str):
        return [case.key for case in grid(grid_name())[op]], implementations.names(op)

    def setup(self, case_key: str, impl: str):
        case = Case.from_key(case_key)
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        reason = implementations.unavailable_reason(case, impl, self.device)
        if reason:
            raise NotImplementedError(reason)
        if self.device == "cpu" and cost.flops(case) > CPU_MAX_FLOPS:
            raise NotImplementedError(f"{cost.flops(case):.2g} flops is too large for a CPU run")
        try:
            self.inputs = make_inputs(case, self.device)
            with torch.inference_mode():
                self.call = self.prepared_call(case, impl, self.inputs)
                out = self.call()  # first call: compiles and autotunes
                problem = mismatch(out, reference(case, self.inputs), torch_dtype(case))
        except torch.cuda.OutOfMemoryError as e:
            raise NotImplementedError(f"does not fit in device memory: {e}") from None
        if problem:
            raise AssertionError(f"{impl} computes a wrong result for {case_key}: {problem}")
        del out

    def prepared_call(self, case: Case, impl: str, inputs: dict):
        """The zero-argument call to measure (a hook: the suite's own tests plant a wrong one)."""
        return implementations.prepare(case, impl, inputs)

    def track_latency(self, case_key, impl):
        interpreted = impl == implementations.FUSED and self.device == "cpu"
        samples, warmup = (self.interpreter_samples, 1) if interpreted else (self.samples, self.warmup)
        with torch.inference_mode():
            times = timing.latency_samples(self.call, self.device, samples=samples, warmup=warmup)
        return {"samples": times, "number": 1}

    track_latency.unit = "seconds"

    def track_peak_memory(self, case_key, impl):
        """Device memory one call needs beyond its inputs: output plus intermediates."""
        if self.device != "cuda":
            skip("peak memory is read from the CUDA allocator")
        with torch.inference_mode():
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            out = self.call()
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - before
        del out
        return peak

    track_peak_memory.unit = "bytes"

    def track_kernels_per_call(self, case_key, impl):
        if self.device != "cuda":
            skip("device kernels are counted on CUDA")
        from .harness.profiling import kernels_per_call

        with torch.inference_mode():
            return kernels_per_call(self.call)

    track_kernels_per_call.unit = "kernels"
