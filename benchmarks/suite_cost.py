"""How long the asv suite takes on one H200, modelled from the suite's own counts and measured inputs.

    python -m benchmarks.suite_cost                    # quick and default, cold and warm caches
    python -m benchmarks.suite_cost --grid default --caches cold

The counts come from the suite itself: every timing class's params (bench_*.py, bench_compile
left out: static metrics are recorded on their own machine), so a new class or grid case
updates the model. Per asv run: discovery and the forkserver (each imports torch). Per process:
asv's fork and bookkeeping. Per measured case x implementation (one measuring pass serves its
three metrics, common._CaseBenchmark): CUDA init, the float64 reference, warm-up and samples
with the L2 flush, peak memory, the profiler; a cold torch.compile per compile case; for fused,
the autotuner: every offered config compiled once per specialisation (dtype, activation, bias)
and benchmarked once per autotune key (M bucket, N, K, dtype). INPUTS names where each number
comes from; "assumed" ones are what the GPU must still measure.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import math
import pkgutil
import sys
from dataclasses import dataclass

# (value, source). H200 numbers are from the runner measurements in docs/design.md.
INPUTS = {
    "import_torch_s": (4.9, "measured on the H200 runner"),
    "cuda_init_s": (0.36, "measured on the H200 runner"),
    "process_s": (0.04, "measured here: asv 0.6.6 forkserver, 40 more trivial track processes cost 1.6 s (2 shared cores)"),
    "triton_compile_s": (1.04, "measured here: fused_mlp.aot, 16 sm_90 linear_act configs in 16.7 s, Triton 3.9, one core"),
    "autotune_bench_s": (0.125, "Triton's autotuner benchmarks each config for warmup 25 ms + rep 100 ms"),
    "torch_compile_cold_s": (10.0, "assumed (Inductor, one small graph, cold caches); measure on the GPU"),
    "torch_compile_warm_s": (2.0, "assumed (FX graph and Triton caches warm); measure on the GPU"),
    "profiler_s": (1.0, "assumed (torch.profiler start and one profiled call)"),
    "flush_s": (0.12e-3, "256 MB memset per sample at ~2.1 TB/s write (half the 4270 GB/s copy ceiling)"),
    "call_over_floor": (1.5, "anchors in docs/design.md: 1.0-3.3x the roofline floor"),
    "copy_gbps": (4270.0, "measured on the H200 (device copy, read + write)"),
    "tflops": ({"bf16": 680.0, "fp16": 680.0, "fp32": 51.0, "fp8": 1360.0},
               "bf16 measured on the H200; fp16 as bf16; fp32 (no TF32) the H200's spec; fp8 assumed 2x bf16 (the datasheet's ratio)"),
    "fp64_tflops": (60.0, "the H200's FP64 tensor-core spec, for the float64 reference"),
    "ceiling_process_s": (1.0, "assumed: one 2 GiB copy or 8192^3 matmul, 23 calls"),
}


def value(name):
    return INPUTS[name][0]


@dataclass
class Cost:
    asv_runs: int = 0
    processes: int = 0
    measured: int = 0
    torch_compiles: int = 0
    autotune_keys: int = 0
    autotune_configs: int = 0
    triton_compiles: int = 0
    seconds: float = 0.0

    def add(self, other: "Cost") -> "Cost":
        return Cost(*(getattr(self, f) + getattr(other, f) for f in self.__dataclass_fields__))


def timing_classes(grid: str) -> list[type]:
    """Every asv class of the timing modules (bench_compile left out), imported under `grid`."""
    import os

    from .harness.grids import GRID_ENV

    os.environ[GRID_ENV] = grid
    import benchmarks

    classes = []
    for info in pkgutil.iter_modules(benchmarks.__path__):
        if not info.name.startswith("bench_") or info.name == "bench_compile":
            continue
        module = importlib.reload(importlib.import_module(f"benchmarks.{info.name}"))
        classes += [obj for name, obj in vars(module).items()
                    if isinstance(obj, type) and not name.startswith("_") and obj.__module__ == module.__name__
                    and hasattr(obj, "params")]
    return classes


def _metrics(cls) -> list[str]:
    return [name for name in dir(cls) if name.startswith(("track_", "time_"))]


def _gemm_kernels(case) -> list[tuple]:
    """(kernel, M, N, K, dtype, activation, bias) of every fused GEMM launch a Case makes."""
    M = case.M
    if case.op == "linear_act":
        return [("linear_act", M, case.N, case.K, case.dtype, case.activation, case.bias)]
    if case.op == "gated_mlp":
        return [("gated_up", M, case.N, case.K, case.dtype, case.activation, False),
                ("linear_act", M, case.K, case.N, case.dtype, "none", False)]
    if case.op == "narrow_mlp":
        width = 64 if max(case.widths) <= 64 else 128
        return [(f"narrow_mlp/width={width}", M, case.widths[-1], case.K, case.dtype, case.activation, case.bias)]
    raise ValueError(f"no launch model for op {case.op!r}: add it to benchmarks.suite_cost._gemm_kernels")


def _offered_configs() -> dict[tuple[str, str], int]:
    """Offered sm_90 configs per (kernel name, dtype), both GEMM variants together (plan only, no compile)."""
    from .harness.library import compile_check  # the suite's one way into fused_mlp

    aot, reason = compile_check()
    if aot is None:
        raise RuntimeError(reason)
    KERNELS = importlib.import_module(aot.__name__.rsplit(".", 1)[0] + ".ops").KERNELS

    counts: dict = {}
    for task in aot.plan(("sm_90",), activations=(aot.COSTLIEST_ACTIVATION,)):
        if task.offered:
            spec = KERNELS[task.kernel_index]
            name = spec.name if spec.name != "narrow_mlp" else f"narrow_mlp/{spec.variant}"
            counts[(name, task.dtype)] = counts.get((name, task.dtype), 0) + 1
    return counts


def _call_seconds(case) -> float:
    from .harness import cost as workload_cost

    flops = workload_cost.flops(case)
    roof = value("tflops")[workload_cost.roof_dtype(case)]  # W8A8 on the FP8 roof, W8A16 on bf16's
    floor = max(flops / (roof * 1e12), workload_cost.min_bytes(case) / (value("copy_gbps") * 1e9))
    return floor * value("call_over_floor")


def model(grid: str, warm: bool) -> dict[str, Cost]:
    """Modelled cost per class of `grid` on one H200; `warm`: Triton/Inductor caches kept from a
    previous call (compiles nearly free; autotune results cached on disk: no benchmarking)."""
    from .common import _CaseBenchmark
    from .harness import cost as workload_cost
    from .harness import implementations
    from .harness.workloads import Case

    offered = _offered_configs()
    seen_keys, seen_compiles = set(), set()
    per_class = {}
    for cls in timing_classes(grid):
        combos = list(itertools.product(*cls.params))
        c = Cost(asv_runs=1, processes=len(combos) * len(_metrics(cls)))
        c.seconds = 2 * value("import_torch_s") + 1.0 + c.processes * value("process_s")
        if not issubclass(cls, _CaseBenchmark):  # the device ceilings
            c.measured = sum(1 for _ in combos)
            c.seconds += c.measured * value("ceiling_process_s")
            per_class[f"{cls.__module__}.{cls.__name__}"] = c
            continue
        for key, impl, *_ in combos:
            case = Case.from_key(key)
            if impl != implementations.FUSED and implementations.unavailable_reason(case, impl, "cuda"):
                continue
            c.measured += 1
            call = _call_seconds(case)
            c.seconds += (value("cuda_init_s") + workload_cost.flops(case) / (value("fp64_tflops") * 1e12)
                          + (cls.warmup + cls.samples + 2) * (call + value("flush_s")) + value("profiler_s"))
            if impl == implementations.COMPILE:
                c.torch_compiles += 1
                c.seconds += value("torch_compile_warm_s" if warm else "torch_compile_cold_s")
            if impl != implementations.FUSED:
                continue
            for kernel, M, N, K, dtype, activation, bias in _gemm_kernels(case):
                n_configs = offered.get((kernel, dtype), 0)
                tune_key = (kernel, 2 ** math.ceil(math.log2(max(M, 1))), N, K, dtype)
                if tune_key not in seen_keys:  # the disk cache serves later processes
                    seen_keys.add(tune_key)
                    c.autotune_keys += 1
                    c.autotune_configs += n_configs
                    if not warm:
                        c.seconds += n_configs * max(value("autotune_bench_s"), 10 * call)
                compile_key = (kernel, dtype, activation, bias)
                if compile_key not in seen_compiles:
                    seen_compiles.add(compile_key)
                    c.triton_compiles += n_configs
                    c.seconds += n_configs * (0.05 if warm else value("triton_compile_s"))
        per_class[f"{cls.__module__}.{cls.__name__}"] = c
    return per_class


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.suite_cost", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grid", action="append", choices=("tiny", "quick", "default", "full"))
    parser.add_argument("--caches", choices=("cold", "warm", "both"), default="both")
    args = parser.parse_args(argv)
    print("| grid | caches | class | asv processes | measured combos | torch.compiles | autotune keys / configs | Triton compiles | modelled s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for grid in args.grid or ["quick", "default"]:
        for warm in {"cold": [False], "warm": [True], "both": [False, True]}[args.caches]:
            per_class = model(grid, warm)
            total = Cost()
            for name, c in per_class.items():
                total = total.add(c)
                print(f"| {grid} | {'warm' if warm else 'cold'} | {name} | {c.processes} | {c.measured} | {c.torch_compiles} | "
                      f"{c.autotune_keys} / {c.autotune_configs} | {c.triton_compiles} | {c.seconds:.0f} |")
            print(f"| {grid} | {'warm' if warm else 'cold'} | **total** | {total.processes} | {total.measured} | "
                  f"{total.torch_compiles} | {total.autotune_keys} / {total.autotune_configs} | {total.triton_compiles} | "
                  f"**{total.seconds:.0f} s = {total.seconds / 60:.1f} min** |")
    print("\nInputs:")
    for name, (val, source) in INPUTS.items():
        print(f"- {name} = {val}: {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
