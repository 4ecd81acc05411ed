"""Write synthetic benchmark histories in asv's exact on-disk result format.

The layout and every field match what ``asv run --record-samples`` (asv 0.6.6,
asv_runner 0.3.2) writes for a ``track_`` benchmark that returns
``{"samples": [...], "number": 1}``:

    <results>/benchmarks.json                      indent=4, sort_keys, "version": 2
    <results>/<machine>/machine.json               indent=4, sort_keys, "version": 1
    <results>/<machine>/<sha[:8]>-<env>.json       compact, api version 2, NaN/Infinity literals

Per result row: ``result_columns`` order, a NaN result for a skipped combination and
null for a failed one, stats truncated to 5 significant digits (asv's
``truncate_float_list``), trailing empty columns dropped, a whole-benchmark failure
stored as ``null``. The statistics are asv_runner's ``compute_stats`` (median,
order-statistic 99 % CI of the median, linear-interpolated quartiles), vectorised.

What is planted (steps, drifts) is returned as ground truth, so the regression detector
can be scored against it. Everything is driven by one seed.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from asv_results.safe_read import read_json

RESULT_COLUMNS = [
    "result", "params", "version", "started_at", "duration",
    "stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75",
    "stats_number", "stats_repeat", "samples", "profile",
]

DAY_MS = 86_400_000
FIRST_COMMIT_DATE_MS = 1_790_000_000_000  # an arbitrary fixed epoch, in ms like asv


@dataclass(frozen=True)
class SeriesSpec:
    """One series = one parameter combination of one benchmark, and how it behaves.

    ``steps`` are ``(commit_index, relative_change)``: from that commit on, the true
    level is multiplied by ``1 + relative_change``. ``drift`` is
    ``(start_index, end_index, relative_change)`` spread linearly over the span.
    ``run_noise`` is the commit-to-commit jitter (log-normal sigma of the run level),
    ``sample_noise`` the jitter of samples within one run. ``bimodal`` is
    ``(gap, probability)``: a run lands on the upper mode ``level*(1+gap)`` with that
    probability (a bistable runner). ``outlier_prob`` is the chance that a whole run is
    15-50 % worse than it should be.
    """

    benchmark: str
    params: tuple = ()
    param_names: tuple = ()
    unit: str = "seconds"
    higher_is_better: bool = False
    base: float = 1e-4
    run_noise: float = 0.02
    sample_noise: float = 0.02
    steps: tuple = ()
    drift: tuple | None = None
    bimodal: tuple | None = None
    outlier_prob: float = 0.0
    skip_prob: float = 0.0
    fail_prob: float = 0.0
    # (commit_index, "ok" | "skipped" | "failed"): from that commit of this history on, the series has
    # that status
    # (a baseline that starts failing, a peer that appears); applied in order after the draws.
    status_steps: tuple = ()


STATUS_CODES = {"ok": 0, "skipped": 1, "failed": 2}


@dataclass(frozen=True)
class PlantedChange:
    """Ground truth: a level change planted in one series."""

    benchmark: str
    params_key: str
    series_index: int
    kind: str  # "step" or "drift"
    commit_index: int  # first commit at the new level (drift: first drifting commit)
    end_index: int  # == commit_index for a step; last drifting commit for a drift
    commit_hash: str
    relative_change: float  # signed change of the measured value
    direction: str  # "regression" or "improvement"


@dataclass
class History:
    results_dir: Path
    machine: str
    env_name: str
    commits: list[str]
    dates_ms: list[int]
    series: list[SeriesSpec]
    planted: list[PlantedChange] = field(default_factory=list)


def params_key(param_names: Sequence[str], param_reprs: Sequence[str]) -> str:
    """The series label used by asv_results.data (``name=repr, ...``)."""
    return ", ".join(f"{n}={v}" for n, v in zip(param_names, param_reprs))


def commit_hashes(n_commits: int, seed: int) -> list[str]:
    return [hashlib.sha1(f"synthetic-{seed}-{i}".encode()).hexdigest() for i in range(n_commits)]


def _truncate5(a: np.ndarray) -> np.ndarray:
    """asv's truncate_float_list: round to 5 significant digits."""
    with np.errstate(divide="ignore", invalid="ignore"):
        mag = np.floor(np.log10(np.abs(a)))
    mag = np.where(np.isfinite(mag), mag, 0)
    scale = 10.0 ** (4 - mag)
    return np.round(a * scale) / scale


def _median_ci_ranks(n: int, alpha: float = 0.01) -> tuple[int | None, int | None]:
    """Order-statistic ranks (0-based) of asv_runner's quantile_ci for the median."""
    pa, pb = alpha / 2, 1 - alpha / 2
    lo = hi = None
    cdf = 0.0
    for k in range(n):
        cdf += math.comb(n, k) * 0.5**n
        if cdf <= pa:
            lo = k
        if cdf >= pb:
            hi = k
            break
    return lo, hi


def _true_levels(spec: SeriesSpec, n_commits: int) -> np.ndarray:
    factor = np.ones(n_commits)
    for index, rel in spec.steps:
        factor[index:] *= 1 + rel
    if spec.drift is not None:
        start, end, rel = spec.drift
        span = max(end - start + 1, 1)
        ramp = np.clip((np.arange(n_commits) - start + 1) / span, 0, 1)
        factor *= (1 + rel) ** ramp  # geometric ramp: equal relative change per commit
    return spec.base * factor


def _run_levels(spec: SeriesSpec, levels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    n = len(levels)
    run = levels * np.exp(rng.normal(0.0, spec.run_noise, n))
    if spec.bimodal is not None:
        gap, prob = spec.bimodal
        run = run * np.where(rng.random(n) < prob, 1 + gap, 1.0)
    if spec.outlier_prob:
        bad = rng.random(n) < spec.outlier_prob
        worse = 1 + rng.uniform(0.15, 0.5, n)
        # an outlier run is slow: lower throughput for higher-is-better metrics
        run = np.where(bad, run / worse if spec.higher_is_better else run * worse, run)
    return run


def _stats(samples: np.ndarray) -> dict[str, np.ndarray]:
    """compute_stats for an array (..., n_samples), all rows at once."""
    n = samples.shape[-1]
    ordered = np.sort(samples, axis=-1)
    lo, hi = _median_ci_ranks(n)
    ci_a = ordered[..., lo] if lo is not None else np.full(ordered.shape[:-1], -np.inf)
    ci_b = ordered[..., hi] if hi is not None else np.full(ordered.shape[:-1], np.inf)
    return {
        "result": np.median(ordered, axis=-1),
        "ci_99_a": ci_a,
        "ci_99_b": ci_b,
        "q_25": np.quantile(ordered, 0.25, axis=-1),
        "q_75": np.quantile(ordered, 0.75, axis=-1),
    }


def _column(values: np.ndarray, status: np.ndarray, truncate: bool) -> list | None:
    """One per-combination column: None where the combination did not run."""
    if not (status == 0).any():
        return None
    out = (_truncate5(values) if truncate else values).tolist()
    for i in np.flatnonzero(status != 0):
        out[i] = None
    return out


def write_history(
    results_dir: str | os.PathLike,
    series: Sequence[SeriesSpec],
    n_commits: int,
    *,
    seed: int = 0,
    n_samples: int = 10,
    record_samples: bool = True,
    machine: str = "synthetic-gpu",
    env_name: str = "existing-py_usr_bin_python3",
    warmup_outlier_prob: float = 0.1,
    first_commit: int = 0,
    machine_params: dict | None = None,
    merge_benchmarks: bool = False,
) -> History:
    """Write ``n_commits`` result files for ``series`` and return what was planted.

    Series of one benchmark share one params grid (the product of the values seen per
    position); grid cells no series covers are written as skipped (NaN), as asv would.

    ``first_commit`` continues an earlier history of the same seed (its commits and dates
    follow on), so a suite whose grid changed can be written as two calls. ``machine_params``
    adds identity keys (gpu, driver, cuda, torch, triton) to machine.json and every result's
    params, as benchmarks.harness.environment registers them. ``merge_benchmarks`` keeps the entries of an
    existing benchmarks.json that this call does not write (several machines or grids).
    """
    rng = np.random.default_rng(seed)
    root = Path(results_dir)
    machine_dir = root / machine
    machine_dir.mkdir(parents=True, exist_ok=True)
    commits = commit_hashes(first_commit + n_commits, seed)[first_commit:]
    dates = [FIRST_COMMIT_DATE_MS + i * DAY_MS // 4 for i in range(first_commit, first_commit + n_commits)]

    by_benchmark: dict[str, list[int]] = {}
    for i, spec in enumerate(series):
        by_benchmark.setdefault(spec.benchmark, []).append(i)

    # value arrays per benchmark: (n_commits, n_combos[, n_samples]); status 0 ok, 1 skipped, 2 failed
    bench_meta, bench_data = {}, {}
    planted: list[PlantedChange] = []
    for name, members in by_benchmark.items():
        first = series[members[0]]
        n_params = len(first.params)
        param_names = list(first.param_names) or [f"param{j + 1}" for j in range(n_params)]
        grid = [list(dict.fromkeys(repr(series[m].params[j]) for m in members)) for j in range(n_params)]
        combos = [tuple(c) for c in itertools.product(*grid)] if n_params else [()]
        column_of = {c: k for k, c in enumerate(combos)}
        samples = np.full((n_commits, len(combos), n_samples), np.nan)
        status = np.ones((n_commits, len(combos)), dtype=np.int8)
        for m in members:
            spec = series[m]
            reprs = tuple(repr(p) for p in spec.params)
            k = column_of[reprs]
            levels = _true_levels(spec, n_commits)
            run = _run_levels(spec, levels, rng)
            s = run[:, None] * np.exp(rng.normal(0.0, spec.sample_noise, (n_commits, n_samples)))
            # asv's first samples after warm-up are often slow (seen on the H200 runner)
            slow_first = rng.random(n_commits) < warmup_outlier_prob
            s[:, 0] = np.where(slow_first, s[:, 0] * rng.uniform(1.5, 4.0, n_commits), s[:, 0])
            samples[:, k, :] = s
            roll = rng.random(n_commits)
            status[:, k] = np.where(roll < spec.fail_prob, 2, np.where(roll < spec.fail_prob + spec.skip_prob, 1, 0))
            for index, state in spec.status_steps:
                status[index:, k] = STATUS_CODES[state]
            key = params_key(param_names, reprs)
            for index, rel in spec.steps:
                planted.append(_planted(spec, key, m, "step", index, index, commits, rel))
            if spec.drift is not None:
                start, end, rel = spec.drift
                planted.append(_planted(spec, key, m, "drift", start, end, commits, rel))
        version = hashlib.sha256(name.encode()).hexdigest()
        bench_meta[name] = {
            "code": f"def {name.rsplit('.', 1)[-1]}(self, *params):\n    ...\n",
            "name": name,
            "param_names": param_names if n_params else [],
            "params": grid,
            "timeout": 300,
            "type": "track",
            "unit": first.unit,
            "version": version,
        }
        bench_data[name] = (samples, status, grid, version)

    existing = {}
    if merge_benchmarks and (root / "benchmarks.json").exists():
        existing, reason = read_json(root / "benchmarks.json", root)
        if reason is not None or not isinstance(existing, dict):  # never write over what cannot be read
            raise ValueError(f"cannot merge into {root / 'benchmarks.json'}: {reason or 'not a JSON object'}")
    _write_json(root / "benchmarks.json", {**existing, **bench_meta, "version": 2}, pretty=True)
    machine_info = {"arch": "x86_64", "cpu": "Synthetic CPU", "gpu": "Synthetic GPU", "machine": machine,
                    "num_cpu": "16", "os": "Linux", "ram": "137438953472", **(machine_params or {})}
    _write_json(machine_dir / "machine.json", {**machine_info, "version": 1}, pretty=True)

    python = "/usr/bin/python3"
    for c, (commit, date) in enumerate(zip(commits, dates)):
        results = {}
        for name, (samples, status, grid, version) in bench_data.items():
            results[name] = _result_row(samples[c], status[c], grid, version, date, record_samples)
        doc = {
            "commit_hash": commit,
            "env_name": env_name,
            "date": date,
            "params": {**machine_info, "python": python},
            "python": python,
            "requirements": {},
            "env_vars": {},
            "result_columns": RESULT_COLUMNS,
            "results": results,
            "durations": {"<build>": 0.00012},
            "version": 2,
        }
        _write_json(machine_dir / f"{commit[:8]}-{env_name}.json", doc, pretty=False)

    return History(root, machine, env_name, commits, dates, list(series), planted)


def _planted(spec, key, index, kind, start, end, commits, rel) -> PlantedChange:
    worse = rel < 0 if spec.higher_is_better else rel > 0
    return PlantedChange(spec.benchmark, key, index, kind, start, end, commits[start], rel,
                         "regression" if worse else "improvement")


def _result_row(samples, status, grid, version, date, record_samples) -> list | None:
    """One benchmark's row in result_columns order, as asv's Results.save writes it."""
    stats = _stats(samples)
    ok = status == 0
    result = stats["result"].tolist()
    for i in np.flatnonzero(~ok):
        result[i] = None if status[i] == 2 else float("nan")
    if all(r is None for r in result):
        result = None  # a benchmark that failed for every combination is stored as null
    n = samples.shape[-1]
    row = [
        result, grid, version, date + 60_000, 1.2345,
        _column(stats["ci_99_a"], status, True), _column(stats["ci_99_b"], status, True),
        _column(stats["q_25"], status, True), _column(stats["q_75"], status, True),
        _column(np.ones(len(status)), status, False), _column(np.full(len(status), n), status, False),
    ]
    if record_samples and ok.any():
        rows = samples.tolist()
        for i in np.flatnonzero(~ok):
            rows[i] = None
        row.append(rows)
    if row[10] is not None:  # counts are ints in asv's files
        row[9] = [None if v is None else int(v) for v in row[9]]
        row[10] = [None if v is None else int(v) for v in row[10]]
    while row and row[-1] is None:
        row.pop()
    return row or None


def _write_json(path: Path, data: dict, pretty: bool) -> None:
    with open(path, "w", encoding="utf-8") as fd:
        if pretty:
            json.dump(data, fd, indent=4, sort_keys=True)
        else:
            json.dump(data, fd)


def scale_series(n_series: int, *, seed: int = 0, n_steps: int = 1, n_commits: int = 500) -> list[SeriesSpec]:
    """A large, mixed grid for load/scale tests: latency, TFLOP/s, GB/s and bytes series,
    some with a planted step, a few bimodal, drifting or occasionally skipped/failed."""
    rng = np.random.default_rng(seed)
    kinds = [("bench_synth.Latency.track_latency", "seconds", False, 1e-4),
             ("bench_synth.Throughput.track_tflops", "TFLOP/s", True, 300.0),
             ("bench_synth.Bandwidth.track_gbps", "GB/s", True, 2000.0),
             ("bench_synth.Memory.track_peak_memory", "bytes", False, 2.0**30)]
    impls = ("fused", "unfused")
    specs = []
    for i in range(n_series):
        name, unit, higher, base = kinds[i % len(kinds)]
        case = (i // len(kinds)) // len(impls)
        impl = impls[(i // len(kinds)) % len(impls)]
        steps = tuple((int(rng.integers(n_commits // 5, n_commits - 5)), float(rng.choice([-0.2, -0.1, 0.1, 0.2])))
                      for _ in range(n_steps if rng.random() < 0.1 else 0))
        specs.append(SeriesSpec(
            benchmark=name, params=(case, impl), param_names=("case", "impl"), unit=unit,
            higher_is_better=higher, base=base * float(rng.uniform(0.5, 2.0)),
            run_noise=float(rng.uniform(0.01, 0.03)), steps=steps,
            bimodal=(0.06, 0.3) if rng.random() < 0.02 else None,
            outlier_prob=0.01, skip_prob=0.002, fail_prob=0.001))
    return specs
