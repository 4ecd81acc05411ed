"""How long the asv suite takes on one H200, modelled from the suite's own counts and measured inputs.

    python -m benchmarks.suite_cost                    # quick and default, cold and warm caches
    python -m benchmarks.suite_cost --grid default --caches cold

The counts come from the suite itself: every timing class's params (bench_*.py, bench_compile
left out: static metrics are recorded on their own machine) and the grids' rules for where each
implementation runs (workload/grids.py `left_out`), so a new class, case or implementation
updates the model; whether a grid fits is the GPU session's question (benchmarks.session_cost:
the quick stage under its cap, each part of the default grid within 80 % of a call, cold caches).
One asv run (discovery and the forkserver each import torch), a fork per process, and one
measuring process per case (common._CaseBenchmark: CUDA and the profiler start once) that
measures each implementation: the float64 reference, warm-up and samples with the L2 flush,
peak memory, kernels per call. Caches on disk are filled by the first process that meets a key
and serve the later ones (`_Session`): torch.compile per graph (a training step: forward and
backward; its two modes share them), max-autotune per GEMM shape, Triton's autotuners (fused_mlp's
and Liger's) compile every config once per specialisation and benchmark it once per autotune key.
INPUTS names where each number comes from; "assumed" ones are what the GPU must still measure.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import itertools
import math
import os
import pkgutil
import sys
from dataclasses import dataclass, field

from workload import device_specs, fp8_dtypes

# (value, source). H200 numbers are from the runner measurements in docs/design.md.
INPUTS = {
    "import_torch_s": (4.9, "measured on the H200 runner"),
    "cuda_init_s": (0.36, "measured on the H200 runner"),
    "asv_run_s": (10.8, "one asv run: discovery and the forkserver each import torch (2 x import_torch_s), +1 s "
                        "of asv itself (assumed); tools/gpu_runner/session.sh's run per class pays it per class"),
    "process_s": (0.04, "measured here: asv 0.6.6 forkserver, 40 more trivial track processes cost 1.6 s (2 shared cores)"),
    "triton_compile_s": (1.1, "measured here (CPU work on the runner too, one config at a time in the autotuner's "
                              "process): `tools/compile_check.sh current --arch sm_90 --kernel linear_act --dtype bf16 "
                              "--jobs 1`, 40 configs, 65 s of compile wall time at 68 % of a shared core (load 3.6 on "
                              "2 cores): 1.1 s of a core per config (wall mean 1.62 s, median 1.18 s), Triton 3.9"),
    "autotune_bench_s": (0.125, "Triton's autotuner benchmarks each config for warmup 25 ms + rep 100 ms"),
    # The three guesses at their pessimistic ends: the budget must survive them until the GPU
    # measures them (session.sh writes the measured values into stages.tsv, `measured` rows).
    "torch_compile_cold_s": (30.0, "pessimistic guess (Inductor, cold caches, per graph: Dynamo's trace, AOTAutograd, "
                                   "lowering and its Triton kernels compiled at ~1.1 s each, measured here; a small graph "
                                   "is typically 5-15 s, a training step's pair up to half a minute); measure on the GPU"),
    "torch_compile_warm_s": (5.0, "pessimistic guess (Inductor's on-disk FX graph and Triton caches hit, filled by an "
                                  "earlier process or call: Dynamo's trace and AOTAutograd still run, 1-3 s typically); "
                                  "measure on the GPU"),
    "max_autotune_gemm_s": (60.0, "pessimistic end of 30-60 s per GEMM shape: Inductor's max-autotune compiles and "
                                  "benchmarks tens of mm templates per shape (tile, persistent and TMA variants, cuBLAS "
                                  "beside them), each Triton compile ~1.1 s of a core here, in a worker pool that starts cold in "
                                  "each process; its autotune cache on disk serves later processes; the end, not the "
                                  "middle, because the default grid's budget must hold until the GPU measures it"),
    "training_graphs": (2, "torch.compile of a training step compiles a forward and a backward graph (AOTAutograd)"),
    "training_calls": (3.0, "a training step: the forward and two GEMMs per forward GEMM in the backward (dX, dW), "
                            "3x the forward's flops; the backward mode runs its forward too, untimed"),
    "fused_backward_configs": (8, "fused_mlp's backward GEMMs autotune over its 8 tile candidates "
                                  "(fused_mlp/ops/_tuning.py GEMM_TILES): one plain-matmul kernel for every dX and dW "
                                  "(compiled once per dtype), one with the activation's derivative in its epilogue per "
                                  "op, dtype and activation; counted for every op whether or not the commit's library "
                                  "trains it yet, so a library that learns to train cannot outgrow the budget unseen"),
    "profiler_s": (1.0, "assumed (torch.profiler start and one profiled call)"),
    "profiler_again_s": (0.2, "assumed: a later torch.profiler pass in the same process (CUPTI started)"),
    "flush_s": (0.12e-3, "256 MB memset per sample at ~2.1 TB/s write (half the 4270 GB/s copy ceiling)"),
    "call_over_floor": (1.5, "anchors in docs/design.md: 1.0-3.3x the roofline floor"),
    "copy_gbps": (4270.0, "measured on the H200 (device copy, read + write)"),
    "tflops": ({"bf16": 680.0, "fp16": 680.0, "fp32": 51.0, "fp8": 1360.0},
               "bf16 measured on the H200; fp16 as bf16; fp32 (no TF32) the H200's spec; fp8 assumed 2x bf16 (the datasheet's ratio)"),
    "fp64_tflops": (60.0, "the H200's FP64 tensor-core spec, for the float64 reference"),
    "ceiling_process_s": (1.0, "assumed: one 2 GiB copy or 8192^3 matmul, 23 calls"),
    "hot_process_s": (1.5, "assumed: one bench_hot measuring pass (inputs, the first call from warm Triton "
                           "caches, the float64 check, a graph capture and 50 replays of 20 calls, 50 host-timed "
                           "bursts of 20); CUDA init is counted once per case"),
}

# Liger-Kernel's kernels per peer and pass: (kernel, autotuned configs) from Liger 0.8.5's source
# (ops/mlp.py: 32-config autotuners keyed on dim, hidden_dim and an M bucket; ops/swiglu.py and
# geglu.py: one elementwise kernel each way, no autotune).
LIGER_KERNELS = {
    ("liger_mlp", "forward"): [("liger_mlp_fwd_inference", 32)],
    ("liger_mlp", "training"): [("liger_mlp_fwd", 32), ("liger_mlp_bwd_dI", 32), ("liger_mlp_bwd_dW", 1)],
    ("liger_glu", "forward"): [("liger_glu_fwd", 1)],
    ("liger_glu", "training"): [("liger_glu_fwd", 1), ("liger_glu_bwd", 1)],
}


def value(name):
    return INPUTS[name][0]


@dataclass
class Cost:
    asv_runs: int = 0
    processes: int = 0
    measured: int = 0
    torch_compiles: int = 0  # cold ones (a warm one hits the on-disk caches)
    autotune_keys: int = 0
    autotune_configs: int = 0
    triton_compiles: int = 0
    max_autotune_gemms: int = 0  # GEMM shapes Inductor's max-autotune tunes cold
    parts: dict = field(default_factory=dict)  # seconds per stage of the work (PARTS)

    @property
    def seconds(self) -> float:
        return sum(self.parts.values())

    def spend(self, part: str, seconds: float) -> None:
        if part not in PARTS:
            raise ValueError(f"unknown part {part!r}; expected one of {PARTS}")
        self.parts[part] = self.parts.get(part, 0.0) + seconds

    def add(self, other: "Cost") -> "Cost":
        counts = {f: getattr(self, f) + getattr(other, f) for f in self.__dataclass_fields__ if f != "parts"}
        parts = {p: self.parts.get(p, 0.0) + other.parts.get(p, 0.0) for p in PARTS if p in self.parts or p in other.parts}
        return Cost(**counts, parts=parts)


# Where the time goes, in the order of a table's columns.
PARTS = ("asv", "measuring", "torch.compile", "max-autotune", "Triton compile", "Triton autotune")


@contextlib.contextmanager
def _grid_selected(grid: str):
    """$FUSED_MLP_GRID = grid while the model reads the suite (the asv classes' params and the
    implementations' grid rules follow it), then as it was, with the suite's modules re-read."""
    from workload.grids import GRID_ENV

    before = os.environ.get(GRID_ENV)
    os.environ[GRID_ENV] = grid
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(GRID_ENV, None)
        else:
            os.environ[GRID_ENV] = before
        for module in _bench_modules():
            importlib.reload(module)


def _bench_modules() -> list:
    import benchmarks

    return [importlib.import_module(f"benchmarks.{info.name}") for info in pkgutil.iter_modules(benchmarks.__path__)
            if info.name.startswith("bench_") and info.name != "bench_compile"]


def timing_classes(grid: str) -> list[type]:
    """Every asv class of the timing modules (bench_compile left out), imported under `grid`
    (call inside _grid_selected(grid))."""
    classes = []
    for module in map(importlib.reload, _bench_modules()):
        classes += [obj for name, obj in vars(module).items()
                    if isinstance(obj, type) and not name.startswith("_") and obj.__module__ == module.__name__
                    and hasattr(obj, "params")]
    return classes


def _metrics(cls) -> list[str]:
    return [name for name in dir(cls) if name.startswith(("track_", "time_"))]


def _gemm_kernels(case) -> list[tuple]:
    """(kernel, M, N, K, dtype, activation, bias) of every fused GEMM launch a Case makes."""
    M = case.M
    # The FP8 forms launch the _fp8 kernels, in e4m3 (W8A8) or with bf16 x (W8A16)
    suffix, dtype = ("_fp8", "fp8" if fp8_dtypes.form(case.dtype) == "w8a8" else "bf16") if fp8_dtypes.is_fp8(
        case.dtype) else ("", case.dtype)
    if case.op == "linear_act":
        return [("linear_act" + suffix, M, case.N, case.K, dtype, case.activation, case.bias)]
    if case.op == "gated_mlp":
        return [("gated_up" + suffix, M, case.N, case.K, dtype, case.activation, False),
                ("linear_act" + suffix, M, case.K, case.N, dtype, "none", False)]
    if case.op == "narrow_mlp":
        width = 64 if max(case.widths) <= 64 else 128
        return [(f"narrow_mlp/width={width}", M, case.widths[-1], case.K, case.dtype, case.activation, case.bias)]
    raise ValueError(f"no launch model for op {case.op!r}: add it to benchmarks.suite_cost._gemm_kernels")


def _gemm_shapes(case, training: bool) -> list[tuple]:
    """(M, N, K, dtype) of every GEMM the unfused forward runs (and, training, its backward's
    dX and dW GEMMs): what Inductor's max-autotune tunes, one shape at a time."""
    if case.op == "narrow_mlp":
        forward = [(case.M, o, i) for i, o in case.layer_pairs]
    elif case.op == "gated_mlp":
        forward = [(case.M, case.N, case.K), (case.M, case.K, case.N)]  # gate and up share a shape, then down
    else:
        forward = [(case.M, case.N, case.K)]
    shapes = list(forward)
    if training:
        for M, N, K in forward:
            shapes += [(M, K, N), (N, K, M)]  # dX = dY @ W, dW = dY.T @ X
    return [(*shape, case.dtype) for shape in shapes]


def _offered_configs() -> dict[tuple[str, str], int]:
    """Offered sm_90 configs per (kernel name, dtype), both GEMM variants together (plan only, no compile)."""
    from benchmarks.harness.library import compile_check  # the suite's one way into fused_mlp

    aot, reason = compile_check()
    if aot is None:
        raise RuntimeError(reason)
    KERNELS = importlib.import_module(aot.__name__.rsplit(".", 1)[0] + ".ops").KERNELS

    counts: dict = {}
    for task in aot.plan(("sm_90",), activations=(aot.COSTLIEST_ACTIVATION,)):
        spec = KERNELS[task.kernel_index]
        # the training forward (STORE_PRE) is its own autotune choice; the model counts the inference one's
        if task.offered and not getattr(spec, "training_forward", False):
            name = spec.name if spec.name != "narrow_mlp" else f"narrow_mlp/{spec.variant}"
            counts[(name, task.dtype)] = counts.get((name, task.dtype), 0) + 1
    return counts


def _call_seconds(case) -> float:
    from workload import cost as workload_cost

    flops = workload_cost.flops(case)
    roof = value("tflops")[workload_cost.roof_dtype(case)]  # W8A8 on the FP8 roof, W8A16 on bf16's
    floor = max(flops / (roof * 1e12), workload_cost.min_bytes(case) / (value("copy_gbps") * 1e9))
    return floor * value("call_over_floor")


class _Session:
    """What the on-disk caches hold so far in one session (Triton's kernels and autotune
    results, Inductor's FX graphs and max-autotune choices): the first process to meet a key
    pays for it cold, later ones find it; `warm`: a previous call filled them all."""

    def __init__(self, warm: bool):
        self.warm = warm
        self.seen: set = set()
        self.runs = 0  # asv runs modelled so far: each starts its own measuring processes

    def first_process(self, key) -> bool:
        """Whether `key` (a case, in a class and mode) starts a measuring process in this asv run."""
        return self.first(("process", self.runs, key))

    def first(self, key) -> bool:
        if key in self.seen:
            return False
        self.seen.add(key)
        return True

    def torch_compile(self, c: Cost, key, graphs: int = 1) -> None:
        if self.first(("graph", key)) and not self.warm:
            c.torch_compiles += graphs
            c.spend("torch.compile", graphs * value("torch_compile_cold_s"))
        else:
            c.spend("torch.compile", graphs * value("torch_compile_warm_s"))

    def max_autotune(self, c: Cost, shapes) -> None:
        for shape in shapes:
            if self.first(("max_autotune", shape)) and not self.warm:
                c.max_autotune_gemms += 1
                c.spend("max-autotune", value("max_autotune_gemm_s"))

    def triton_autotune(self, c: Cost, compile_key, tune_key, n_configs: int, call: float) -> None:
        """A Triton autotuner: every config compiled once per specialisation and benchmarked once
        per autotune key (the disk cache serves later processes)."""
        if self.first(("tune", tune_key)):
            c.autotune_keys += 1
            c.autotune_configs += n_configs
            if not self.warm:
                c.spend("Triton autotune", n_configs * max(value("autotune_bench_s"), 10 * call))
        if self.first(("compile", compile_key)):
            c.triton_compiles += n_configs
            c.spend("Triton compile", n_configs * (0.05 if self.warm else value("triton_compile_s")))


def _training_class(cls) -> bool:
    return "mode" in getattr(cls, "param_names", ())


def _measured_seconds(cls, case, training: bool, mode: str | None, first_in_process: bool) -> float:
    """One measuring pass without compiles and autotuning: the float64 reference, warm-up and
    samples with the L2 flush, peak memory, the profiler (twice for a backward's kernels); CUDA's
    and the profiler's start for the first pass of a process (one per case: common._CaseBenchmark)."""
    from workload import cost as workload_cost

    calls = value("training_calls") if training else 1.0
    call = calls * _call_seconds(case)
    reference = calls * workload_cost.flops(case) / (value("fp64_tflops") * 1e12)
    profiles = 2 if mode == "backward" else 1
    start = value("cuda_init_s") + value("profiler_s") - value("profiler_again_s") if first_in_process else 0.0
    return (start + reference + (cls.warmup + cls.samples + 2) * (call + value("flush_s"))
            + profiles * value("profiler_again_s"))


def benchmark_names(cls, combo) -> list[str]:
    """asv's names of one combination of `cls`, a metric each: "bench_x.Class.metric(param reprs)",
    what asv's -b regex is matched against (asv.benchmarks.Benchmarks)."""
    module = cls.__module__.removeprefix("benchmarks.")
    return [f"{module}.{cls.__name__}.{metric}({', '.join(map(repr, combo))})" for metric in _metrics(cls)]


def selected(grid: str, only):
    """{Class: [its combinations that `only` selects: some metric's name matches]} of `grid`
    (call inside _grid_selected(grid))."""
    out = {}
    for cls in timing_classes(grid):
        combos = [combo for combo in itertools.product(*cls.params) if any(map(only, benchmark_names(cls, combo)))]
        if combos:
            out[cls] = combos
    return out


def model(grid: str, warm: bool, only=None, session: "_Session | None" = None) -> dict[str, Cost]:
    """Modelled cost per class of `grid` on one H200, as one asv run; `warm`: Triton/Inductor caches
    kept from a previous call (compiles nearly free; autotune results cached on disk: no
    benchmarking); `only(name)`: the benchmarks one asv run selects (asv's names with their params,
    `benchmark_names`, as its -b regex matches them), caches filled by them alone; `session`: the
    caches as an earlier run left them (a later run of the same call, profile_pass after)."""
    with _grid_selected(grid):
        return _model(grid, only or (lambda name: True), session or _Session(warm))


def _model(grid: str, only, session: "_Session") -> dict[str, Cost]:
    from benchmarks.common import _CaseBenchmark
    from benchmarks.harness import implementations
    from workload.modes import FORWARD
    from workload.case import Case

    offered = _offered_configs()
    per_class = {"asv run": Cost(asv_runs=1)}  # one asv run for the grid, as benchmarks.run makes it
    per_class["asv run"].spend("asv", value("asv_run_s"))
    session.runs += 1
    for cls, combos in selected(grid, only).items():
        # asv starts a process per selected metric and combination; the first of a case measures
        # the case's selected implementations ($FUSED_MLP_BENCH: common._CaseBenchmark._selected)
        c = Cost(processes=sum(sum(map(only, benchmark_names(cls, combo))) for combo in combos))
        c.spend("asv", c.processes * value("process_s"))
        if getattr(cls, "hot", False):  # bench_hot: one pass per combination, CUDA started once per case
            runs = [key for key, impl in combos
                    if not implementations.unavailable_reason(Case.from_key(key), impl, "cuda")]
            c.measured = len(runs)
            c.spend("measuring", len(set(runs)) * value("cuda_init_s") + c.measured * value("hot_process_s"))
            per_class[f"{cls.__module__}.{cls.__name__}"] = c
            continue
        if not issubclass(cls, _CaseBenchmark):  # the device ceilings: the GPU sizes run, the CPU ones skip
            from benchmarks import bench_device

            c.measured = sum(1 for combo in combos if {bench_device.GPU_COPY_BYTES, bench_device.GPU_MATMUL_N} & set(combo))
            c.spend("measuring", c.measured * value("ceiling_process_s"))
            per_class[f"{cls.__module__}.{cls.__name__}"] = c
            continue
        training = _training_class(cls)
        for key, impl, *rest in combos:
            mode = rest[0] if training else FORWARD
            case = Case.from_key(key)
            # fused's backward is not probed here (that needs the GPU): counted as if it trains
            if not (impl == implementations.FUSED or not implementations.unavailable_reason(case, impl, "cuda", mode)):
                continue
            c.measured += 1
            c.spend("measuring", _measured_seconds(cls, case, training, mode, session.first_process((cls, key, mode))))
            _first_call(session, c, case, impl, training, offered)
        per_class[f"{cls.__module__}.{cls.__name__}"] = c
    return per_class


def _first_call(session: "_Session", c: Cost, case, impl: str, training: bool, offered: dict) -> None:
    """What the first call of `impl` on `case` compiles and tunes, as far as `session`'s caches
    do not hold it already: torch.compile's graphs, max-autotune's GEMM shapes, the Triton
    autotuners (Liger's, fused_mlp's forward and, training, backward kernels)."""
    from benchmarks.harness import implementations
    from workload.fp8_dtypes import SCALED_MM_COMPILE

    call = _call_seconds(case)
    graph = "training" if training else "inference"  # backward and full modes share one graph
    if impl in implementations.COMPILE_MODES or impl == SCALED_MM_COMPILE:  # a cold Inductor compile each
        session.torch_compile(c, (impl, case, graph), value("training_graphs") if training else 1)
        if impl == implementations.COMPILE_MAX_AUTOTUNE:
            session.max_autotune(c, _gemm_shapes(case, training))
    for kernel, n_configs in LIGER_KERNELS.get((impl, "training" if training else "forward"), []):
        session.triton_autotune(c, (kernel, case.dtype), (kernel, *_tune_key(case)), n_configs, call)
    if impl != implementations.FUSED:
        return
    for kernel, M, N, K, dtype, activation, bias in _gemm_kernels(case):
        n_configs = offered.get((kernel, dtype), 0)
        bucket = 2 ** math.ceil(math.log2(max(M, 1)))
        session.triton_autotune(c, (kernel, dtype, activation, bias), (kernel, bucket, N, K, dtype), n_configs, call)
        if training:
            n_bwd = value("fused_backward_configs")
            if activation != "none" or kernel == "gated_up":  # the derivative's epilogue (dgated for gated_up)
                session.triton_autotune(c, ("backward/dact", kernel, dtype, activation),
                                        ("backward/dact", kernel, bucket, N, K, dtype, activation), n_bwd, call)
            for dims in ((bucket, K, N), (N, K, bucket)):  # dX = dZ @ W, dW = dZ.T @ X
                session.triton_autotune(c, ("backward/matmul", dtype), ("backward/matmul", *dims, dtype), n_bwd, call)


def profile_pass(grid: str, session: "_Session") -> Cost:
    """benchmarks.profile --grid `grid` on one H200 after `session`'s runs: every case of the grid
    with every implementation CUDA runs, one profiled call each (the profiler's start once), a
    fresh torch.compile per case (profile_case resets Dynamo) from the caches the runs left; the
    grid's own rules (grids.left_out) say what runs, as benchmarks.profile applies them."""
    from benchmarks.harness import implementations
    from workload.grids import grid as grid_cases

    with _grid_selected(grid):
        offered = _offered_configs()
        c = Cost(processes=1)
        for cases in grid_cases(grid).values():
            for case in cases:
                for impl in implementations.names(case.op):
                    if implementations.unavailable_reason(case, impl, "cuda"):
                        continue
                    c.spend("measuring", (value("profiler_s") if c.measured == 0 else value("profiler_again_s"))
                            + 3 * _call_seconds(case))  # the first call, the profiled one, the reference's share
                    c.measured += 1
                    _first_call(session, c, case, impl, False, offered)
    return c


def _tune_key(case) -> tuple:
    return case.K, case.N, 2 ** math.ceil(math.log2(max(case.M, 1))), case.dtype


def total(grid: str, warm: bool) -> Cost:
    """The whole grid's modelled cost (every class together)."""
    out = Cost()
    for c in model(grid, warm).values():
        out = out.add(c)
    return out


def _row(grid, caches, name, c: Cost, bold=False) -> str:
    b = "**" if bold else ""
    seconds = f"{b}{c.seconds:.0f} s = {c.seconds / 60:.1f} min{b}" if bold else f"{c.seconds:.0f}"
    parts = " | ".join(f"{c.parts.get(p, 0.0):.0f}" for p in PARTS)
    return (f"| {grid} | {caches} | {b}{name}{b} | {c.processes} | {c.measured} | {c.torch_compiles} | "
            f"{c.max_autotune_gemms} | {c.autotune_keys} / {c.autotune_configs} | {c.triton_compiles} | {parts} | {seconds} |")


def on_device(name: str) -> None:
    """INPUTS' ceilings carried from the H200 to device `name` (device_specs.scaled). A dtype the
    device has no peak for keeps no ceiling: the model refuses it by name."""
    copy, source = INPUTS["copy_gbps"]
    INPUTS["copy_gbps"] = (device_specs.scaled(copy, "memory", "H200", name),
                           f"{source}, carried to the {name} at the same fraction of its datasheet bandwidth")
    tflops, source = INPUTS["tflops"]
    INPUTS["tflops"] = ({d: device_specs.scaled(t, d, "H200", name) for d, t in tflops.items()},
                        f"{source}; carried to the {name} at the same fraction of its datasheet peak per dtype")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.suite_cost", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grid", action="append", choices=("tiny", "quick", "default", "full"))
    parser.add_argument("--caches", choices=("cold", "warm", "both"), default="both")
    parser.add_argument("--device", choices=sorted(device_specs.SPECS), default="H200",
                        help="model the GPU work on this device: the H200's measured ceilings at the same fraction "
                             "of this device's datasheet peaks (workload/device_specs.py)")
    args = parser.parse_args(argv)
    if args.device != "H200":
        on_device(args.device)
    print("| grid | caches | class | asv processes | measured combos | cold torch.compiles | max-autotune GEMM shapes "
          "| Triton autotune keys / configs | Triton compiles | " + " | ".join(f"{p} s" for p in PARTS) + " | modelled s |")
    print("|" + " --- |" * (10 + len(PARTS)))
    for grid in args.grid or ["quick", "default"]:
        for warm in {"cold": [False], "warm": [True], "both": [False, True]}[args.caches]:
            caches = "warm" if warm else "cold"
            per_class = model(grid, warm)
            whole = Cost()
            for name, c in per_class.items():
                whole = whole.add(c)
                print(_row(grid, caches, name.removeprefix("benchmarks."), c))
            print(_row(grid, caches, "total", whole, bold=True))
    print("\nInputs:")
    for name, (val, source) in INPUTS.items():
        print(f"- {name} = {val}: {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
