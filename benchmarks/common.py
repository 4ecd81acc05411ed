"""The machinery every Case benchmark class shares: which grid runs, and one measuring pass per
case x implementation whose results every metric reads.

asv runs each metric x parameter combination in its own process. Measuring there would repeat
the inputs, the first call (torch.compile, autotuning), the reference check and the warm-up once
per metric. Instead the first metric of a combination to run measures all of them (latency
samples, peak memory, kernels per call) and files them in asv's setup_cache folder (one per asv
run, removed by asv when the run ends); the other metrics' processes read that file. A skip or
a failure is filed too, so every metric of the combination reports it without measuring again.

That first process then measures and files the case's other implementations too (every one but
fused, the library under test, which always has a process of its own): CUDA's start, the
profiler's and Inductor's imports are paid once per case instead of once per implementation (on
the GPU runner most of the suite's time outside compiles). Dynamo's caches are reset between
them, as between processes. A crash that kills that process (not an exception: those are filed
as the implementation's failure) costs the metric it ran for; the others measure themselves.

Import stays cheap: no CUDA initialisation and no tensors at module level (asv imports the suite
for discovery on machines without a GPU, and forkserver forks after import). fused_mlp itself is
imported only when a fused case is measured (`harness.implementations.library`).

A new Case benchmark class (bench_ops.py's, or a training-mode one) subclasses _CaseBenchmark,
sets `op`, `params` (and `param_names` beyond case and impl) and, where its call is not the
forward one, overrides the hooks `prepared_call` and `result_problem` and, where its call is
measured differently, `latency_samples`, `peak_memory` and `kernels_per_call` (bench_training.py).
A parameter named `mode` (workload.modes) is the one option this pass reads itself: it decides
what may run (`unavailable_reason`), the CPU size limit, and whether autograd records.

The pass itself is _MeasuredBenchmark's; _CaseBenchmark adds the cold-L2 metrics above. A class
with other metrics (bench_hot.py's graph replay and launch overhead) subclasses
_MeasuredBenchmark, names them in `metrics`, measures them all in `measure_metrics` and gives
each a track_<metric> that reads it back.
"""

import hashlib
import json
import os
import re
import traceback
from pathlib import Path

import torch

from benchmarks.harness import first_calls, implementations, runner_state, timing  # modules, not names: asv takes any time_*/track_* name in the suite for a benchmark

from workload import cost, modes
from benchmarks import skip_reasons
from workload.grids import BENCH_ENV, GRID_ENV, GRIDS, OUTCOMES_ENV, grid
from benchmarks.harness.references import mismatch, reference
from asv_results.safe_read import read_json
from benchmarks.harness.tensors import make_inputs, torch_dtype
from benchmarks.harness.tolerances import tolerance
from workload.case import Case

# Largest case the CPU smoke run attempts; the default grid's big shapes skip on a CPU.
CPU_MAX_FLOPS = 2e9
METRICS = ("latency", "peak_memory", "kernels_per_call")


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


class Skipped(Exception):
    """A metric that cannot be measured here, with the reason (asv records NaN)."""


def _filed_name(cls_name: str, params: tuple) -> str:
    digest = hashlib.sha256(json.dumps([cls_name, *map(str, params)]).encode()).hexdigest()[:32]
    return f"{digest}.json"


def _file(folder: str, name: str, content: dict) -> None:
    tmp = os.path.join(folder, name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(content, f)
    os.replace(tmp, os.path.join(folder, name))  # whole or absent: a killed process leaves no half file


def file_setup_outcomes(benchmark_prefix: str, metrics, whole: tuple[str, str] | None, entries=()) -> None:
    """What a setup_cache decided for the combinations of a benchmark, into $FUSED_MLP_OUTCOMES
    when set (benchmarks/skip_reasons.py): ``whole``, (status, reason) for every combination of
    that status (one entry per metric, not one per combination), or None; ``entries``, those of
    single combinations. Every combination counts as measured again: an earlier run's reasons
    for this commit are replaced."""
    folder = os.environ.get(OUTCOMES_ENV)
    if not folder:
        return
    names = [f"{benchmark_prefix}.track_{metric}" for metric in metrics]
    every = skip_reasons.EVERY_COMBINATION
    filed = [skip_reasons.entry(name, every, *whole) for name in names] if whole else []
    os.makedirs(folder, exist_ok=True)
    _file(folder, _filed_name(benchmark_prefix, (every,)),
          {"entries": filed + list(entries), "measured": [[n, every] for n in names]})


class _MeasuredBenchmark:  # underscore: asv discovers only the concrete classes
    """The one measuring pass per combination, whatever its metrics: params = (case key,
    implementation, ...); subclasses set `op`, `params`, `metrics` (each one a track_<metric>
    method that returns self._metric(name)) and `measure_metrics`.

    The measuring pass refuses what cannot run here (skip = NaN) and checks the implementation's
    output against the float64 reference before anything is timed: a wrong result raises, so asv
    records a failure (null) for every metric, never a time.
    """

    op = ""
    param_names = ["case", "impl"]
    metrics: tuple[str, ...] = ()  # what measure_metrics returns, one track_<metric> each
    timeout = 900  # the first metric's process: CUDA init, Triton/Inductor compile, every metric
    version = "1"  # bump when what a metric means changes; old results are then set apart
    samples = 100
    warmup = 25  # the first samples after a short warm-up were outliers on the H200
    # Triton's CPU interpreter (TRITON_INTERPRET=1) takes ~0.3 s per call of a tiny case: a few
    # samples show the pipeline works; they are not a performance number.
    interpreter_samples = 5

    @classmethod
    def grid_params(cls, op: str):
        return [case.key for case in grid(grid_name())[op]], implementations.names(op)

    # --- asv's hooks ------------------------------------------------------------------------
    def setup_cache(self):
        """The folder this run's measurements are filed in: asv's own per-run cache folder (the
        working directory it gives setup_cache and every benchmark process of the run)."""
        folder = os.path.join(os.getcwd(), "measurements")
        os.makedirs(folder, exist_ok=True)
        return folder

    def setup(self, folder, *params):
        """This combination's measurements: filed by an earlier metric of this run, or measured now."""
        name = _filed_name(type(self).__name__, params)
        path = os.path.join(folder, name)
        filed = read_json(Path(path), Path(folder))[0] if os.path.exists(path) else None
        if not isinstance(filed, dict):  # not filed yet (or not readable: measured again)
            filed = self._measure_recorded(params)
            _file(folder, name, filed)
            self._record_reasons(params, filed)
            self._measure_siblings(folder, params)
        if "skip" in filed:
            raise NotImplementedError(filed["skip"])
        if "failed" in filed:
            raise AssertionError(filed["failed"])
        self.measured = filed["metrics"]

    def _measure_siblings(self, folder, params) -> None:
        """File every other implementation of this case (and mode) that this asv run selects and
        that is not filed yet, fused excepted."""
        case_key, impl, *rest = params
        params = getattr(self, "params", ())
        impls = params[1] if isinstance(params, (list, tuple)) and len(params) > 1 else ()
        for other in impls:
            name = _filed_name(type(self).__name__, (case_key, other, *rest))
            if (other in (impl, implementations.FUSED) or os.path.exists(os.path.join(folder, name))
                    or not self._selected((case_key, other, *rest))):
                continue
            implementations.reset_compiled()  # as a fresh process would start
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            filed = self._measure_recorded((case_key, other, *rest))
            _file(folder, name, filed)
            self._record_reasons((case_key, other, *rest), filed)

    def _measure_recorded(self, params) -> dict:
        """measure_all(*params) between two GPU snapshots, filed for benchmarks.run where it set
        $FUSED_MLP_RUNNER_STATE (harness/runner_state.py), so a throttle during this pass is tied
        to its metrics. A skip ran nothing on the device: no snapshot."""
        folder = os.environ.get(runner_state.BENCHMARKS_ENV)
        if not folder:
            return self.measure_all(*params)
        start = runner_state.gpu_snapshot()
        filed = self.measure_all(*params)
        if "skip" not in filed:
            prefix = self._benchmark_prefix()
            runner_state.file_benchmark_state(folder, _filed_name(prefix, params),
                                              [f"{prefix}.track_{m}" for m in self.metrics],
                                              dict(zip(self.param_names, params)), start, runner_state.gpu_snapshot())
        return filed

    def _benchmark_prefix(self) -> str:
        """asv's name for this class: module (within the suite) and class."""
        cls = type(self)
        return f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}"

    def _record_reasons(self, params, filed: dict) -> None:
        """Why each metric of this combination is NaN or null, into $FUSED_MLP_OUTCOMES when set
        (benchmarks/skip_reasons.py: asv stores no reason)."""
        folder = os.environ.get(OUTCOMES_ENV)
        if not folder:
            return
        named = dict(zip(self.param_names, params))
        whole = ("skipped", filed["skip"]) if "skip" in filed else ("failed", filed["failed"]) if "failed" in filed else None
        entries = []
        for metric in self.metrics:
            value = filed.get("metrics", {}).get(metric)
            status = whole or (("skipped", value["skip"]) if isinstance(value, dict) and "skip" in value else None)
            if status:
                entries.append(skip_reasons.entry(f"{self._benchmark_prefix()}.track_{metric}", named, *status))
        measured = [[f"{self._benchmark_prefix()}.track_{metric}", named] for metric in self.metrics]
        os.makedirs(folder, exist_ok=True)
        _file(folder, _filed_name(self._benchmark_prefix(), params), {"entries": entries, "measured": measured})

    def _selected(self, params) -> bool:
        """Whether this asv run runs some metric of this combination: $FUSED_MLP_BENCH holds the
        run's -b regex (benchmarks.run sets it), matched as asv matches it, against
        `module.Class.metric(param reprs)`; unset, every combination is selected."""
        regex = os.environ.get(BENCH_ENV)
        if not regex:
            return True
        prefix, args = self._benchmark_prefix(), ", ".join(map(repr, params))
        return any(re.search(regex, f"{prefix}.{metric}({args})") for metric in dir(type(self))
                   if metric.startswith("track_"))

    def _metric(self, name):
        value = self.measured[name]
        if isinstance(value, dict) and "skip" in value:
            skip(value["skip"])
        return value

    # --- the measuring pass -----------------------------------------------------------------
    def prepared_call(self, case: Case, impl: str, inputs: dict, **options):
        """The zero-argument call to measure (a hook: the suite's own tests plant a wrong one;
        `options`: the parameters after case and impl, e.g. a training mode)."""
        return implementations.prepare(case, impl, inputs)

    def result_problem(self, case: Case, inputs: dict, out, **options) -> str | None:
        """Why `out` is not a correct result of `case`, or None (a hook, as prepared_call)."""
        return mismatch(out, reference(case, inputs), torch_dtype(case), tolerance=tolerance(case))

    def measure_all(self, case_key: str, impl: str, *rest) -> dict:
        """{"metrics": {metric: value or {"skip": why}}}, {"skip": why} or {"failed": why}."""
        options = dict(zip(self.param_names[2:], rest))
        try:
            return {"metrics": self._measure(Case.from_key(case_key), impl, options)}
        except (Skipped, NotImplementedError) as e:  # NotImplementedError: the suite's (and asv's) skip
            return {"skip": str(e)}
        except torch.cuda.OutOfMemoryError as e:
            return {"skip": f"does not fit in device memory: {e}"}
        except Exception as e:  # recorded for every metric of the combination: asv stores null
            return {"failed": f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}"}

    def measuring_device(self) -> str:
        """Where this pass measures (a hook: raise Skipped where the metrics need what is absent)."""
        return "cuda" if torch.cuda.is_available() else "cpu"

    def measure_metrics(self, call, impl: str, device: str) -> dict:
        """{metric: value or {"skip": why}} for every name in `metrics`, from the checked call
        (run inside the pass's inference or autograd mode)."""
        raise NotImplementedError(f"{type(self).__name__} defines no measure_metrics")

    def _measure(self, case: Case, impl: str, options: dict) -> dict:
        device = self.measuring_device()
        mode = options.get("mode", modes.FORWARD)
        reason = implementations.unavailable_reason(case, impl, device, mode)
        if reason:
            raise Skipped(reason)
        flops = cost.flops(case) * modes.FORWARDS_PER_CALL[mode]
        if device == "cpu" and flops > CPU_MAX_FLOPS:
            raise Skipped(f"{flops:.2g} flops per call is too large for a CPU run")
        inputs = make_inputs(case, device)
        with torch.inference_mode() if mode == modes.FORWARD else torch.enable_grad():
            call = self.prepared_call(case, impl, inputs, **options)
            # first call: compiles and autotunes (timed for the GPU session's measured inputs)
            out = first_calls.timed_first_call(call, type(self).__name__, case.key, impl, mode)
            problem = self.result_problem(case, inputs, out, **options)
            del out
            if problem:
                raise AssertionError(f"{impl} computes a wrong result for {case.key}"
                                     f"{'' if mode == modes.FORWARD else f' ({mode})'}: {problem}")
            return self.measure_metrics(call, impl, device)


class _CaseBenchmark(_MeasuredBenchmark):  # underscore: asv discovers only the concrete classes (bench_ops.py)
    """Cold-L2 latency, peak memory and kernels per call of one op's Cases (bench_ops, bench_training)."""

    metrics = METRICS

    def track_latency(self, folder, *params):
        return self._metric("latency")

    track_latency.unit = "seconds"

    def track_peak_memory(self, folder, *params):
        """Device memory one call needs beyond its inputs: output plus intermediates."""
        return self._metric("peak_memory")

    track_peak_memory.unit = "bytes"

    def track_kernels_per_call(self, folder, *params):
        return self._metric("kernels_per_call")

    track_kernels_per_call.unit = "kernels"

    def latency_samples(self, call, device: str, samples: int, warmup: int) -> list[float]:
        """Seconds per call (a hook: a training Step times its timed half only)."""
        return timing.latency_samples(call, device, samples=samples, warmup=warmup)

    def peak_memory(self, call) -> int:
        """CUDA bytes one call needs beyond what exists before it (a hook, as latency_samples)."""
        return _peak_memory(call)

    def kernels_per_call(self, call) -> float:
        """Device kernels one call launches (a hook, as latency_samples; CUDA only)."""
        from benchmarks.harness.profiling import kernels_per_call  # torch.profiler: imported when counted

        return kernels_per_call(call)

    def measure_metrics(self, call, impl: str, device: str) -> dict:
        interpreted = impl == implementations.FUSED and device == "cpu"
        samples, warmup = (self.interpreter_samples, 1) if interpreted else (self.samples, self.warmup)
        metrics = {"latency": {"samples": self.latency_samples(call, device, samples, warmup), "number": 1}}
        if device != "cuda":
            metrics["peak_memory"] = {"skip": "peak memory is read from the CUDA allocator"}
            metrics["kernels_per_call"] = {"skip": "device kernels are counted on CUDA"}
            return metrics
        metrics["peak_memory"] = self.peak_memory(call)
        metrics["kernels_per_call"] = self.kernels_per_call(call)  # torch.profiler: last, after the timings
        return metrics


def _peak_memory(call) -> int:
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out = call()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    del out
    return peak
