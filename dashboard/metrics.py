"""What the dashboard derives from stored measurements (pure: pandas + the cost model, no Dash).

The suite stores latency, peak memory and kernel counts per (Case, implementation), and the
device ceilings per run. Everything else — TFLOP/s, GB/s, roofline fraction, fused-vs-unfused
speedup, A-vs-B significance — is derived here, on the rows in view, never stored.

Each distinct Case key is parsed once (``Case.from_key``, the suite's torch-free workload
vocabulary in benchmarks/harness) into a small table, and joined to the series (not to every
row): a view's rows get the Case fields through their series.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from benchmarks.harness import cost
from benchmarks.harness.ops import spec_of
from benchmarks.harness.modes import FORWARD, MODES  # FORWARD: a benchmark without a mode parameter
from benchmarks.harness.workloads import Case

from dashboard.data import STATUS_OK

COPY_BENCHMARK = "bench_device.CopyCeiling.track_copy_seconds"
MATMUL_BENCHMARK = "bench_device.MatmulCeiling.track_matmul_seconds"
FUSED = "fused"
# The fused peers a user would pick instead of fused_mlp (the suite's implementations of those
# names): max-autotune fuses the epilogue into its GEMM template when that template wins,
# Liger-Kernel's kernels fuse the gate/up activation. Every other implementation but fused is
# "unfused" (eager, default torch.compile, cuBLASLt's epilogue). A later liger_* peer counts too.
COMPILE_MAX_AUTOTUNE = "compile_max_autotune"
FUSED_PEERS = (COMPILE_MAX_AUTOTUNE, "liger_mlp", "liger_glu")
CASE_FIELDS = ("op", "M", "K", "N", "dtype", "activation", "shape")
# Filters shared by the pages, in the order they are shown.
FACETS = ("op", "dtype", "activation", "shape", "impl", "mode")


def is_fused_peer(impl) -> bool:
    return str(impl) in FUSED_PEERS or str(impl).startswith("liger_")


def better_of(benchmark: str, unit: str | None = None, metadata=None) -> str:
    """"lower" or "higher" is better: dashboard/regressions/direction.py decides (imported here on
    first use: importing the detector's package imports scipy, seconds at start-up)."""
    from dashboard.regressions.direction import metric_direction

    return metric_direction(benchmark, unit, metadata=metadata if isinstance(metadata, dict) else None)


@dataclass(frozen=True)
class Metric:
    """One quantity the Trends page can plot."""

    name: str
    label: str
    unit: str  # axis suffix
    source: str  # the stored benchmark method it is derived from

    @property
    def better(self) -> str:
        """"lower" or "higher", from the one direction table the gate uses too."""
        return better_of(self.name, self.unit)


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("latency", "Latency", "s", "track_latency"),
    Metric("tflops", "Throughput", "TFLOP/s", "track_latency"),
    Metric("gbps", "Achieved bandwidth", "GB/s", "track_latency"),
    Metric("roofline", "Fraction of roofline", "", "track_latency"),
    Metric("peak_memory", "Peak memory", "B", "track_peak_memory"),
    Metric("kernels", "Kernels per call", "", "track_kernels_per_call"),
)}
STORED_METRICS = ("latency", "peak_memory", "kernels")  # what Compare compares (derived ones follow)
_METRIC_OF_SOURCE = {m.source: m.name for m in METRICS.values() if m.name in STORED_METRICS}


def stored_metric_of(benchmark: str) -> str | None:
    """The stored metric a benchmark name records ("bench_ops.LinearAct.track_latency" ->
    "latency"), or None for benchmarks that are not this suite's Case metrics."""
    return _METRIC_OF_SOURCE.get(str(benchmark).rsplit(".", 1)[-1])


# --------------------------------------------------------------------------- cases


@lru_cache(maxsize=8192)
def _case_row(key: str) -> dict | None:
    try:
        case = Case.from_key(key)
    except ValueError:
        return None  # a foreign or retired key: the row keeps its key but gets no Case fields
    return {"op": case.op, "M": case.M, "K": case.K, "N": case.N, "dtype": case.dtype,
            "activation": case.activation, "shape": spec_of(case).shape_label(case), "flops": float(cost.flops(case)),
            "min_bytes": float(cost.min_bytes(case)), "intensity": cost.arithmetic_intensity(case)}


def case_table(keys) -> pd.DataFrame:
    """One row per distinct Case key (index), with its fields and cost-model numbers."""
    rows = {k: _case_row(k) for k in dict.fromkeys(keys) if isinstance(k, str)}
    good = {k: r for k, r in rows.items() if r is not None}
    table = pd.DataFrame.from_dict(good, orient="index")
    if table.empty:
        table = pd.DataFrame(columns=[*CASE_FIELDS, "flops", "min_bytes", "intensity"])
    table.index.name = "case"
    return table


CASE_COLUMNS = ("metric", "case", "impl", "mode", *CASE_FIELDS, "flops", "min_bytes", "intensity")


def case_series(series: pd.DataFrame) -> pd.DataFrame:
    """The series that are this suite's Case metrics, with what the views need of them:
    ``metric`` (latency, peak_memory, kernels), ``case`` (the Case key), ``impl``, ``mode``
    (forward, backward, full; "forward" for a benchmark without that parameter), the Case
    fields and the cost model's flops, minimum bytes and intensity. Indexed like ``series``
    (dashboard.table: benchmark, param_names, param_values per series).

    A series counts when its benchmark records a stored metric and has ``case`` and ``impl``
    parameters whose case key parses; any other series (the ceilings, another project's
    benchmarks, a retired case key) is not a Case series.
    """
    rows = {}
    for sid, bench, names, values in zip(series.index, series["benchmark"], series["param_names"],
                                         series["param_values"]):
        metric = stored_metric_of(bench)
        if metric is None or "case" not in names or "impl" not in names:
            continue
        case, impl = values[names.index("case")], values[names.index("impl")]
        mode = values[names.index("mode")] if "mode" in names else FORWARD
        if isinstance(case, str):
            rows[sid] = (metric, case, str(impl), str(mode))
    out = pd.DataFrame.from_dict(rows, orient="index", columns=["metric", "case", "impl", "mode"])
    table = case_table(out["case"].unique() if len(out) else [])
    out = out[out["case"].isin(table.index)]
    out = out.join(table, on="case")
    out.index.name = series.index.name
    return out[list(CASE_COLUMNS)] if len(out) else pd.DataFrame(columns=list(CASE_COLUMNS))


def empty_catalog() -> pd.DataFrame:
    return pd.DataFrame(columns=["case", "impl", "mode", *CASE_FIELDS])


# --------------------------------------------------------------------------- ceilings


@dataclass(frozen=True)
class CeilingProblem:
    """A stored ceiling that was left out, and why (the rest of the run's ceilings still count)."""

    machine: str
    env_name: str
    commit_hash: str
    what: str  # "copy (bytes=1073741824)", "matmul bf16 (n=8192)"
    reason: str

    def text(self) -> str:
        return f"{self.machine} / {self.env_name} commit {self.commit_hash[:8]}: {self.what} left out: {self.reason}"


def _positive_int(value) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if number > 0 and number == value else None


def ceilings_table(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[CeilingProblem]]:
    """Measured ceilings per run (machine, env_name, commit_hash, copy_gbps, tflops_<dtype>...)
    from the ceiling benchmarks' rows, and the stored values that could not be used.

    A time that is not a positive finite number (asv reads Infinity, 0, -1 as measured) or a
    size parameter that is not a positive integer is left out with its reason; the run keeps
    its other ceilings. A run without a usable copy bandwidth has no ceilings at all.
    """
    keys = ["machine", "env_name", "commit_hash"]
    ok = frame[(frame["status"] == STATUS_OK) & frame["benchmark"].isin([COPY_BENCHMARK, MATMUL_BENCHMARK])]
    problems: list[CeilingProblem] = []

    def usable(rows: pd.DataFrame, size_col: str, what) -> pd.DataFrame:
        sizes = rows[size_col].to_numpy(dtype=object)
        good_size = np.array([_positive_int(v) is not None for v in sizes], dtype=bool)
        seconds = rows["value"].to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            good_time = np.isfinite(seconds) & (seconds > 0)
        for i in np.flatnonzero(~(good_size & good_time)):  # the few bad ones, with their reasons
            row = rows.iloc[i]
            reason = (f"{size_col}={sizes[i]!r} is not a positive integer" if not good_size[i]
                      else f"stored time {seconds[i]!r} s is not a positive finite number")
            problems.append(CeilingProblem(str(row["machine"]), str(row["env_name"]), str(row["commit_hash"]),
                                           what(row), reason))
        return rows[good_size & good_time]

    columns: list[pd.Series] = []
    copy = ok[ok["benchmark"] == COPY_BENCHMARK]
    if len(copy) and "bytes" in copy.columns:
        copy = usable(copy, "bytes", lambda r: f"copy ceiling (bytes={r['bytes']})")
        gbps = [cost.copy_gbps(int(b), s) for b, s in zip(copy["bytes"], copy["value"])]
        if len(copy):
            columns.append(copy.assign(copy_gbps=gbps).groupby(keys, observed=True)["copy_gbps"].max())
    matmul = ok[ok["benchmark"] == MATMUL_BENCHMARK]
    if len(matmul) and {"dtype", "n"} <= set(matmul.columns):
        matmul = usable(matmul, "n", lambda r: f"matmul ceiling {r['dtype']} (n={r['n']})")
        tflops = [cost.matmul_tflops(int(n), s) for n, s in zip(matmul["n"], matmul["value"])]
        if len(matmul):
            per_dtype = (matmul.assign(tflops=tflops, dt=matmul["dtype"].astype(str))
                         .groupby([*keys, "dt"], observed=True)["tflops"].max().unstack("dt"))
            per_dtype.columns = [f"tflops_{d}" for d in per_dtype.columns]
            columns.extend(per_dtype[c] for c in per_dtype.columns)
    if not columns:
        return pd.DataFrame(columns=[*keys, "copy_gbps"]), problems
    table = pd.concat(columns, axis=1).reset_index()
    for col in keys:
        table[col] = table[col].astype(str)
    if "copy_gbps" not in table.columns:
        table["copy_gbps"] = np.nan
    return table, problems


def ceilings_by_run(table: pd.DataFrame) -> dict[tuple[str, str, str], cost.Ceilings]:
    """(machine, env_name, commit_hash) -> the Ceilings measured in that run (runs with a copy
    bandwidth only). Cached per table object: a table is built once per results set."""
    cached = _CEILINGS_CACHE.get(id(table))
    if cached is not None and cached[0] is table:
        return cached[1]
    out = {}
    tflops_cols = [c for c in table.columns if str(c).startswith("tflops_")]
    for row in table.to_dict("records"):
        copy = float(row.get("copy_gbps", np.nan))
        if not (np.isfinite(copy) and copy > 0):  # ceilings_table left it out (with its reason)
            continue
        matmul = {c.removeprefix("tflops_"): float(row[c]) for c in tflops_cols if np.isfinite(row[c]) and row[c] > 0}
        out[(row["machine"], row["env_name"], row["commit_hash"])] = cost.Ceilings(copy, matmul)
    _CEILINGS_CACHE.clear()  # one results set at a time
    _CEILINGS_CACHE[id(table)] = (table, out)
    return out


_CEILINGS_CACHE: dict[int, tuple] = {}


def ceilings_of(table: pd.DataFrame, machine: str, env: str, commit: str) -> cost.Ceilings | None:
    """The ceilings measured in one run, or None when that run measured no copy bandwidth."""
    return ceilings_by_run(table).get((str(machine), str(env), str(commit)))


# --------------------------------------------------------------------------- derived metrics


def _ceilings_per_row(rows: pd.DataFrame, ceilings: pd.DataFrame) -> list[cost.Ceilings | None]:
    runs = rows[["machine", "env_name", "commit_hash"]].astype(str).drop_duplicates()
    found = {tuple(r): ceilings_of(ceilings, *r) for r in runs.itertuples(index=False)}
    return [found[(m, e, c)] for m, e, c in zip(rows["machine"].astype(str), rows["env_name"].astype(str),
                                                  rows["commit_hash"].astype(str))]


def floor_seconds_per_row(rows: pd.DataFrame, ceilings: pd.DataFrame) -> np.ndarray:
    """cost.floor_seconds for each row's Case against its own run's ceilings (NaN if none).

    Called per distinct (case, run) in view, a few hundred at most.
    """
    per_row = _ceilings_per_row(rows, ceilings)
    memo: dict = {}
    out = np.full(len(rows), np.nan)
    for i, (key, ceil) in enumerate(zip(rows["case"].astype(str), per_row)):
        if ceil is None:
            continue
        memo_key = (key, id(ceil))
        if memo_key not in memo:
            case = Case.from_key(key)
            memo[memo_key] = cost.floor_seconds(case, ceil) if cost.roof_dtype(case) in ceil.matmul_tflops else np.nan
        out[i] = memo[memo_key]
    return out


def derive(rows: pd.DataFrame, metric: str, ceilings: pd.DataFrame | None = None) -> pd.DataFrame:
    """Rows of the metric's stored source with ``y`` (the metric) and ``y_lo``/``y_hi`` (99 % CI
    band) in the metric's units. Non-finite bounds become NaN, and so do the derived rates of a
    training mode (backward, full): the cost model's flops and bytes are a forward's."""
    spec = METRICS[metric]
    out = rows.copy()
    value = out["value"].to_numpy(dtype=float)
    bounds = {k: out[k].to_numpy(dtype=float) for k in ("ci_99_a", "ci_99_b")}
    if metric in STORED_METRICS:
        factor, invert = np.ones(len(out)), False
    elif metric == "tflops":
        factor, invert = out["flops"].to_numpy(dtype=float) / 1e12, True
    elif metric == "gbps":
        factor, invert = out["min_bytes"].to_numpy(dtype=float) / 1e9, True
    else:  # roofline fraction = floor / latency
        factor = floor_seconds_per_row(out, ceilings if ceilings is not None else pd.DataFrame(
            columns=["machine", "env_name", "commit_hash", "copy_gbps"]))
        invert = True
    if metric not in STORED_METRICS and "mode" in out.columns:
        # flops and bytes are the forward's (the cost model): a training step's rate is not derived
        factor = np.where(out["mode"].astype(str).to_numpy() == FORWARD, factor, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        def convert(x):
            y = factor / x if invert else factor * x
            return np.where(np.isfinite(y) & (y > 0) if invert else np.isfinite(y), y, np.nan)

        out["y"] = convert(value)
        lo, hi = convert(bounds["ci_99_a"]), convert(bounds["ci_99_b"])
    # dividing swaps the ends of an interval
    out["y_lo"], out["y_hi"] = (hi, lo) if invert else (lo, hi)
    out["better"] = spec.better
    return out


# --------------------------------------------------------------------------- speedups


FASTER, SLOWER, WITHIN_NOISE = "faster", "slower", "within noise"
SPEEDUP_COLUMNS = ["case", "mode", *CASE_FIELDS, "fused", "best_baseline", "baseline_impl", "speedup", "verdict",
                   "best_peer", "peer_impl", "peer_speedup", "peer_verdict"]


def _verdicts(fused: pd.DataFrame, other: pd.DataFrame, index) -> np.ndarray:
    """asv's rule without samples: faster / slower when the two 99 % CIs do not overlap."""
    with np.errstate(invalid="ignore"):
        f_lo, f_hi = (fused[c].reindex(index).to_numpy(dtype=float) for c in ("ci_99_a", "ci_99_b"))
        b_lo, b_hi = (other[c].reindex(index).to_numpy(dtype=float) for c in ("ci_99_a", "ci_99_b"))
        faster = f_hi < b_lo  # NaN and the infinite CIs of too few samples compare False
        slower = f_lo > b_hi
    out = np.where(faster, FASTER, np.where(slower, SLOWER, WITHIN_NOISE)).astype(object)
    out[other["value"].reindex(index).isna().to_numpy()] = None
    return out


def speedups(latency_rows: pd.DataFrame, baselines: list[str] | None = None) -> pd.DataFrame:
    """Fused vs the best (fastest) unfused implementation and vs the best fused peer
    (FUSED_PEERS), per case x mode, from latency rows of ONE run.

    Returns one row per case x mode with a measured fused time: case fields, fused,
    best_baseline, baseline_impl, speedup = t_best_unfused / t_fused (NaN when no unfused one
    ran), best_peer, peer_impl, peer_speedup likewise over the fused peers, and ``verdict`` /
    ``peer_verdict``: whether fused is faster or slower beyond the noise, by asv's rule without
    samples (the two 99 % confidence intervals of the medians do not overlap), else "within noise".
    ``baselines``: only these implementations compete (None: all).
    """
    ok = latency_rows[(latency_rows["status"] == STATUS_OK) & np.isfinite(latency_rows["value"])]
    if ok.empty or FUSED not in set(ok["impl"].astype(str)):
        return pd.DataFrame(columns=SPEEDUP_COLUMNS)
    mode = ok["mode"].astype(str) if "mode" in ok.columns else FORWARD
    ok = ok.assign(impl=ok["impl"].astype(str), case=ok["case"].astype(str), mode=mode)
    fastest = ok.sort_values("value", kind="stable").drop_duplicates(["case", "mode", "impl"])
    fused = fastest[fastest["impl"] == FUSED].set_index(["case", "mode"])
    others = fastest[(fastest["impl"] != FUSED) & (fastest["impl"].isin(baselines) if baselines is not None else True)]
    peer = others["impl"].map(is_fused_peer).astype(bool)
    out = fused[list(CASE_FIELDS)].astype(object)
    out["fused"] = fused["value"]
    for pool, value, impl, speedup, verdict in ((others[~peer], "best_baseline", "baseline_impl", "speedup", "verdict"),
                                                (others[peer], "best_peer", "peer_impl", "peer_speedup",
                                                 "peer_verdict")):
        best = pool.drop_duplicates(["case", "mode"]).set_index(["case", "mode"])  # sorted: the first is fastest
        out[value] = best["value"].reindex(out.index)
        out[impl] = best["impl"].reindex(out.index).astype(object)
        out[speedup] = out[value] / out["fused"]
        out[verdict] = _verdicts(fused, best, out.index)
    return out.reset_index()[SPEEDUP_COLUMNS]


SPEEDUP = Metric("speedup", "Speedup of fused", "×", "track_latency")  # Trends only: from several impls' rows
OVER_UNFUSED, OVER_PEER = "over best unfused", "over best fused peer"


def speedup_history(latency_rows: pd.DataFrame, baselines: list[str] | None = None) -> pd.DataFrame:
    """Fused's speedup over the best unfused implementation and over the best fused peer at each
    commit, from the latency rows of one case and mode of ONE run (every commit): one row per
    (commit, line) with line (OVER_UNFUSED / OVER_PEER), commit_hash, date, position (if the rows
    have it), y = t_best / t_fused, its band y_lo = best's CI low / fused's CI high and y_hi the
    other way round (NaN where a CI is not finite), the implementation that was best
    (``best_impl``) and status "ok". ``baselines``: only these compete (None: all)."""
    columns = ["line", "commit_hash", "date", "position", "y", "y_lo", "y_hi", "best_impl", "status"]
    ok = latency_rows[(latency_rows["status"] == STATUS_OK) & np.isfinite(latency_rows["value"])]
    if ok.empty:
        return pd.DataFrame(columns=columns)
    ok = ok.assign(impl=ok["impl"].astype(str), commit_hash=ok["commit_hash"].astype(str))
    if "position" not in ok.columns:
        ok = ok.assign(position=np.nan)
    fastest = ok.sort_values("value", kind="stable").drop_duplicates(["commit_hash", "impl"])
    fused = fastest[fastest["impl"] == FUSED].set_index("commit_hash")
    others = fastest[(fastest["impl"] != FUSED) & (fastest["impl"].isin(baselines) if baselines is not None else True)]
    peer = others["impl"].map(is_fused_peer).astype(bool)
    parts = []
    for line, pool in ((OVER_UNFUSED, others[~peer]), (OVER_PEER, others[peer])):
        best = pool.drop_duplicates("commit_hash").set_index("commit_hash")
        common = fused.index.intersection(best.index)
        if not len(common):
            continue
        f, b = fused.loc[common], best.loc[common]
        with np.errstate(divide="ignore", invalid="ignore"):
            lo = b["ci_99_a"].to_numpy(dtype=float) / f["ci_99_b"].to_numpy(dtype=float)
            hi = b["ci_99_b"].to_numpy(dtype=float) / f["ci_99_a"].to_numpy(dtype=float)
        finite = lambda v: np.where(np.isfinite(v) & (v > 0), v, np.nan)  # noqa: E731
        parts.append(pd.DataFrame({"line": line, "commit_hash": common, "date": f["date"].to_numpy(),
                                   "position": f["position"].to_numpy(), "y": (b["value"] / f["value"]).to_numpy(),
                                   "y_lo": finite(lo), "y_hi": finite(hi), "best_impl": b["impl"].to_numpy(),
                                   "status": STATUS_OK}))
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def geomean(values) -> float:
    """Geometric mean of the finite positive values (NaN when there are none)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return float(np.exp(np.log(v).mean())) if len(v) else float("nan")


def _most_common(values) -> str | None:
    """The distinct names, most frequent first ("liger_mlp, compile_max_autotune"), or None."""
    counts = pd.Series([v for v in values if isinstance(v, str)], dtype=object).value_counts(sort=False)
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(str(k) for k, _ in ordered) if ordered else None


def mode_order(mode) -> int:
    return MODES.index(mode) if mode in MODES else len(MODES)


SUMMARY_COLUMNS = ["op", "dtype", "mode", "cases", "geomean", FASTER, SLOWER, WITHIN_NOISE, "no_baseline",
                   "peer_geomean", "peer_cases", "peer_impl", "peer_" + FASTER, "peer_" + SLOWER]


def speedup_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per op x dtype x mode of a speedups() table: cases, the geometric mean speedup over the
    best unfused implementation and how many cases fused is faster, slower or within noise of
    it; the same over the best fused peer (peer_*), with the peer that was best most often."""
    rows = []
    table = table if "mode" in table.columns else table.assign(mode=FORWARD)
    for (op, dtype, mode), group in table.groupby(["op", "dtype", "mode"], sort=True):
        verdicts = group["verdict"].value_counts()
        peer = group["peer_verdict"].value_counts() if "peer_verdict" in group else pd.Series(dtype=int)
        peer_speedup = group["peer_speedup"] if "peer_speedup" in group else pd.Series(dtype=float)
        rows.append({"op": op, "dtype": dtype, "mode": mode, "cases": len(group), "geomean": geomean(group["speedup"]),
                     FASTER: int(verdicts.get(FASTER, 0)), SLOWER: int(verdicts.get(SLOWER, 0)),
                     WITHIN_NOISE: int(verdicts.get(WITHIN_NOISE, 0)),
                     "no_baseline": int(group["verdict"].isna().sum()),
                     "peer_geomean": geomean(peer_speedup), "peer_cases": int(peer_speedup.notna().sum()),
                     "peer_impl": _most_common(group["peer_impl"]) if "peer_impl" in group else None,
                     "peer_" + FASTER: int(peer.get(FASTER, 0)), "peer_" + SLOWER: int(peer.get(SLOWER, 0))})
    out = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    order = [(op, dtype, mode_order(mode)) for op, dtype, mode in zip(out["op"], out["dtype"], out["mode"])]
    return out.iloc[sorted(range(len(out)), key=order.__getitem__)].reset_index(drop=True)


# --------------------------------------------------------------------------- A vs B


def _stats_of(row) -> tuple[dict, list | None]:
    stats = {"ci_99_a": row.ci_99_a, "ci_99_b": row.ci_99_b, "repeat": row.repeat}
    samples = row.samples if isinstance(row.samples, list) else None
    return stats, samples


CASE_KEY = ("metric", "case", "impl", "mode")
SERIES_KEY = ("benchmark", "params_key")  # any asv results (generic mode)


def compare_rows(old: pd.DataFrame, new: pd.DataFrame, factor: float = 1.1, better: str | dict = "lower",
                 key=CASE_KEY, fields=CASE_FIELDS, samples=None) -> pd.DataFrame:
    """Every series present in either run: old -> new, ratio and asv's verdict.

    Significance is asv's own rule (``asv compare``: ``_is_result_better``): the two results
    must differ by more than ``factor`` AND ``asv._stats.is_different`` must hold — Mann-Whitney U
    on the samples (p < 0.002) when both runs recorded samples, else non-overlapping 99 % CIs.
    ``better``: "lower" / "higher" for every row, or a dict from the first ``key`` column's value
    (the benchmark, in generic mode) to it. ``key`` names a series; ``fields`` are carried along.
    ``samples``: for frames without a ``samples`` column, a function from their ``row`` numbers to
    asv's samples lists, called for the rows beyond the factor only (the others need none).
    """
    from asv.commands.compare import _is_result_better  # asv==0.6.6 pinned; the rule asv compare applies

    key, fields = list(key), list(fields)
    lazy = "samples" not in old.columns or "samples" not in new.columns
    keep = [*key, *fields, "value", "status", "ci_99_a", "ci_99_b", "repeat", "row" if lazy else "samples", "unit"]
    merged = old[keep].merge(new[keep], on=key, how="outer", suffixes=("_old", "_new"))
    lower_is_better = (np.full(len(merged), better == "lower") if isinstance(better, str)
                       else merged[key[0]].astype(str).map(better).fillna("lower").to_numpy() == "lower")
    for col in fields:
        merged[col] = merged[f"{col}_old"].astype(object).where(merged[f"{col}_old"].notna(),
                                                                merged[f"{col}_new"].astype(object))
    v_old = merged["value_old"].to_numpy(dtype=float)
    v_new = merged["value_new"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = v_new / v_old
    both = np.isfinite(v_old) & np.isfinite(v_new) & (v_old > 0) & (v_new > 0)
    # Only rows beyond the factor can be significant, so asv's test runs on those alone.
    candidates = both & ((ratio > factor) | (ratio < 1 / factor))
    change = np.full(len(merged), "", dtype=object)
    change[both & ~candidates] = "unchanged"
    if lazy:  # the samples of the rows that can be significant, fetched in one go
        merged["samples_old"], merged["samples_new"] = None, None
        chosen = np.flatnonzero(candidates)
        if len(chosen) and samples is not None:
            merged.iloc[chosen, merged.columns.get_loc("samples_old")] = pd.Series(
                samples(merged["row_old"].to_numpy()[chosen].astype(np.int64)), dtype=object).to_numpy()
            merged.iloc[chosen, merged.columns.get_loc("samples_new")] = pd.Series(
                samples(merged["row_new"].to_numpy()[chosen].astype(np.int64)), dtype=object).to_numpy()
    cols_old = merged[["ci_99_a_old", "ci_99_b_old", "repeat_old", "samples_old"]].set_axis(
        ["ci_99_a", "ci_99_b", "repeat", "samples"], axis=1)
    cols_new = merged[["ci_99_a_new", "ci_99_b_new", "repeat_new", "samples_new"]].set_axis(
        ["ci_99_a", "ci_99_b", "repeat", "samples"], axis=1)
    for i in np.flatnonzero(candidates):
        a_ss, b_ss = _stats_of(cols_old.iloc[i]), _stats_of(cols_new.iloc[i])
        o, n = v_old[i], v_new[i]
        lower_better = lower_is_better[i]
        if _is_result_better(n, o, b_ss, a_ss, factor):  # new smaller than old, significantly
            change[i] = "better" if lower_better else "worse"
        elif _is_result_better(o, n, a_ss, b_ss, factor):
            change[i] = "worse" if lower_better else "better"
        else:
            change[i] = "unchanged (not significant)"
    status_old = merged["status_old"].astype(object).fillna("absent")
    status_new = merged["status_new"].astype(object).fillna("absent")
    change = np.where(both, change, [f"{o} \u2192 {n}" for o, n in zip(status_old, status_new)])
    out = merged[key + fields].copy()
    out["old"], out["new"], out["ratio"] = v_old, v_new, np.where(both, ratio, np.nan)
    out["change"] = change
    out["significant"] = np.isin(change, ["better", "worse"])
    out["unit"] = merged["unit_old"].astype(object).where(merged["unit_old"].notna(), merged["unit_new"].astype(object))
    for col in key:
        out[col] = out[col].astype(str)
    return out.sort_values(["significant", "ratio"], ascending=[False, False], key=_abs_log_key).reset_index(drop=True)


def _abs_log_key(column: pd.Series):
    if column.name == "ratio":
        return np.abs(np.log(column.astype(float)))
    return column


def change_counts(table: pd.DataFrame) -> dict[str, int]:
    """Counts of a compare table's verdicts: better / worse / unchanged / other."""
    changes = table["change"].astype(str)
    return {"better": int((changes == "better").sum()), "worse": int((changes == "worse").sum()),
            "unchanged": int(changes.str.startswith("unchanged").sum()),
            "other": int((~changes.isin(["better", "worse"]) & ~changes.str.startswith("unchanged")).sum())}


# --------------------------------------------------------------------------- facets


def apply_filters(rows: pd.DataFrame, selections: dict[str, list | None]) -> pd.DataFrame:
    """Rows whose facet values are in each non-empty selection (an empty selection = all)."""
    mask = np.ones(len(rows), dtype=bool)
    for facet, chosen in selections.items():
        if chosen:
            mask &= rows[facet].astype(str).isin([str(c) for c in chosen]).to_numpy()
    return rows[mask]


def facet_counts(catalog: pd.DataFrame, selections: dict[str, list | None]) -> dict[str, dict[str, int]]:
    """For each facet, how many distinct cases each value has given the OTHER facets' selections.

    ``catalog`` has one row per (case, impl) with the case fields, e.g. from :func:`case_catalog`.
    """
    out = {}
    for facet in FACETS:
        others = {f: v for f, v in selections.items() if f != facet}
        rows = apply_filters(catalog, others)
        counts = rows.groupby(rows[facet].astype(str), observed=True)["case"].nunique()
        out[facet] = {str(k): int(v) for k, v in counts.items()}
    return out


def case_catalog(rows: pd.DataFrame) -> pd.DataFrame:
    """Distinct (case, impl, mode) with their Case fields (what filters count)."""
    cols = ["case", "impl", "mode", *CASE_FIELDS]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    return rows[cols].drop_duplicates(["case", "impl", "mode"]).astype(
        {c: str for c in ("case", "impl", "mode", "op", "dtype", "activation", "shape")})


def sort_values_naturally(values) -> list[str]:
    """Values in a readable order: numbers inside them compare as numbers ("M=16" before "M=128",
    "size=1024, ..." before "size=65536, ..."), the rest as text."""
    def key(v: str):  # text and digit runs alternate, so the parts always compare like with like
        return [int(part) if i % 2 else part for i, part in enumerate(re.split(r"(\d+)", v))]
    return sorted({str(v) for v in values}, key=key)

