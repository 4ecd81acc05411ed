"""Findings: the detector run over every series of an asv results frame, each change named
(benchmark, parameters, commit) and oriented (a regression or an improvement, by direction.py)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from asv_results.commit_order import ORDER, resolve_commit  # noqa: F401 (re-exported by the package)
from asv_results.data import STATUS_OK
from asv_results.worker_processes import run_chunks
from regressions.direction import HIGHER, metric_direction
from regressions.statistics import TAIL, DetectorSettings, detect_changes

REGRESSION, IMPROVEMENT = "regression", "improvement"
# Below this many series a pool costs more than it saves: a spawned worker imports numpy, scipy
# and asv's step detection (about a second) and the detector takes 1-3 ms a series.
PARALLEL_MIN_SERIES = 2000
SERIES_PER_TASK = 500


@dataclass(frozen=True)
class Finding:
    """A change at one commit in one series, named and oriented."""

    benchmark: str
    params: str  # asv-style "name=repr, ..." key of the parameter combination
    machine: str
    env_name: str
    unit: str | None
    commit_hash: str  # first commit measured at the new level
    previous_commit: str  # last commit measured before it
    commit_date: pd.Timestamp
    before: float
    after: float
    relative_change: float  # after / before - 1 of the measured value
    direction: str  # "regression" or "improvement"
    better: str  # "lower" or "higher" is better for this metric
    kind: str  # "step" (step fit) or "gradual" (a drift or small step the fit left whole)
    confirmed: bool  # False: too few commits after it yet ("suspected")
    p_value: float
    score: float  # change in commit-to-commit noise units
    present_at_newest: bool
    series_last_commit: str  # newest commit this series was measured at
    # The change may as well have come at any commit from earliest_commit to latest_commit
    # (first commit at the new level; change_interval's likelihood-ratio interval).
    earliest_commit: str = ""
    latest_commit: str = ""
    plausible_commits: int = 1  # commits from earliest_commit to latest_commit, both included
    # Clear enough to fail a gate: confirmed, or clear from its first one or two commits
    # (asv's compare rule and far outside the noise the history shows; newest.py).
    clear: bool = False
    # The last commit measured before earliest_commit: surely at the old level (an A/B re-run's A).
    before_earliest: str = ""

    def status(self) -> str:
        """Kind, confirmation, presence and position in a few words, for reports and the inbox."""
        evidence = evidence_word(self.confirmed, self.clear)
        parts = [self.kind if self.kind != "step" else "", evidence,
                 "present" if self.present_at_newest else "not present now", self.position_note()]
        return ", ".join(p for p in parts if p)

    def position_note(self) -> str:
        """Where else the change may be, for people reading a report; "" when it is pinned."""
        return position_note(self.plausible_commits, self.earliest_commit, self.latest_commit)


def evidence_word(confirmed: bool, clear: bool) -> str:
    """How sure the detector is, in the gate's words: "" (confirmed), "clear, not yet confirmed"
    (clear enough to fail the gate) or "suspected" (fails only with --strict)."""
    return "" if confirmed else "clear, not yet confirmed" if clear else "suspected"


def position_note(plausible_commits: int, earliest_commit: str, latest_commit: str) -> str:
    """"could be any of N commits A..B", or "" for a change pinned to one commit (also for
    rows of findings_frame, as the Trends figure shows them)."""
    if plausible_commits <= 1:
        return ""
    return f"could be any of {plausible_commits} commits {earliest_commit[:8]}..{latest_commit[:8]}"


def _detect_chunk(tasks: list, settings: DetectorSettings) -> list:
    return [detect_changes(values, settings, a, b, s) for values, a, b, s in tasks]


def _detect_all(tasks: list, settings: DetectorSettings, jobs: int) -> list:
    """detect_changes for each series' task, in order; in `jobs` worker processes when it pays."""
    if jobs <= 1 or len(tasks) < PARALLEL_MIN_SERIES:
        return _detect_chunk(tasks, settings)
    chunks = [tasks[i:i + SERIES_PER_TASK] for i in range(0, len(tasks), SERIES_PER_TASK)]
    return [changes for done in run_chunks(_detect_chunk, chunks, jobs, settings) for changes in done]


def find_changes(
    frame: pd.DataFrame,
    settings: DetectorSettings = DetectorSettings(),
    direction_overrides: Mapping[str, str] | Callable | None = None,
    benchmarks_meta: Mapping[str, Mapping] | None = None,
    samples_of: Callable | None = None,
    jobs: int = 1,
) -> list[Finding]:
    """Every level change in every series of a frame from :func:`asv_results.loading.load_results`.

    Only status "ok" points enter a series; skipped and failed commits are left out. A frame
    without a ``samples`` column has a ``row`` column and ``samples_of(rows)`` (LoadedResults'):
    only the rows whose samples are used are read. ``jobs``: detector processes where there are
    enough series to gain from them (the gate's CLI: every core; the same findings in any case).
    """
    ok = frame[frame["status"] == STATUS_OK]
    ok = ok[np.isfinite(ok["value"].to_numpy())]
    if ok.empty:
        return []
    keys = ["machine", "env_name", "benchmark", "params_key"]
    codes = [_codes(ok[k]) for k in keys]
    date_utc = ok["date"].to_numpy(dtype="datetime64[ns]")  # UTC, tz dropped
    # the commit order (asv_results.commit_order's column where the frame has it, else the stored date)
    when = ok[ORDER].to_numpy(dtype=np.int64) if ORDER in ok.columns else date_utc.astype(np.int64)
    order = np.lexsort((when, *reversed(codes)))
    stacked = np.stack([c[order] for c in codes], axis=1)
    breaks = np.flatnonzero((np.diff(stacked, axis=0) != 0).any(axis=1)) + 1

    values = ok["value"].to_numpy()[order]
    ci_a = ok["ci_99_a"].to_numpy()[order]
    ci_b = ok["ci_99_b"].to_numpy()[order]
    samples = ok["samples"].to_numpy()[order] if samples_of is None else None
    table_rows = ok["row"].to_numpy()[order] if samples_of is not None else None
    commits = ok["commit_hash"].astype(str).to_numpy()[order]
    dates = date_utc[order]
    labels = {k: ok[k].astype(str).to_numpy()[order] for k in keys}
    units = ok["unit"].astype(object).to_numpy()[order]
    meta = benchmarks_meta or {}

    bounds = [(int(lo), int(hi)) for lo, hi in zip(np.r_[0, breaks], np.r_[breaks, len(order)])
              if hi - lo >= settings.min_before + 1]  # too short: nothing to find
    # Raw samples only matter for a suspected change among the newest commits (asv's compare
    # rule: the TAIL commits searched and the 3 before them), so only that tail is passed on:
    # cheaper to copy and to send to workers.
    keep = TAIL + 3
    if samples_of is not None:  # the tails' samples, read in one go
        tails = np.concatenate([np.arange(max(lo, hi - keep), hi) for lo, hi in bounds]) if bounds else np.empty(0, int)
        samples = np.empty(len(order), dtype=object)
        samples[tails] = samples_of(table_rows[tails])
    tasks = []
    for lo, hi in bounds:
        tail = samples[max(lo, hi - keep):hi]
        has_samples = any(v is not None for v in tail)
        series_samples = [None] * (hi - lo - len(tail)) + list(tail) if has_samples else None
        tasks.append((values[lo:hi], ci_a[lo:hi], ci_b[lo:hi], series_samples))
    results = _detect_all(tasks, settings, jobs)

    findings: list[Finding] = []
    for (lo, hi), changes in zip(bounds, results):
        if not changes:
            continue
        benchmark = labels["benchmark"][lo]
        unit = units[lo] if isinstance(units[lo], str) else None
        better = metric_direction(benchmark, unit, direction_overrides, meta.get(benchmark))
        for c in changes:
            worse = c.relative_change < 0 if better == HIGHER else c.relative_change > 0
            low = c.index_low if c.index_low >= 0 else c.index
            high = c.index_high if c.index_high >= 0 else c.index
            findings.append(Finding(
                benchmark=benchmark, params=labels["params_key"][lo], machine=labels["machine"][lo],
                env_name=labels["env_name"][lo], unit=unit,
                commit_hash=commits[lo + c.index], previous_commit=commits[lo + c.index - 1],
                commit_date=pd.Timestamp(dates[lo + c.index], tz="UTC"), before=c.before, after=c.after,
                relative_change=c.relative_change, direction=REGRESSION if worse else IMPROVEMENT,
                better=better, kind=c.kind, confirmed=c.confirmed, p_value=c.p_value, score=c.score,
                present_at_newest=c.present_at_newest, series_last_commit=commits[hi - 1],
                earliest_commit=commits[lo + low], latest_commit=commits[lo + high],
                plausible_commits=high - low + 1, clear=c.clear,
                before_earliest=commits[lo + low - 1] if low >= 1 else ""))
    findings.sort(key=lambda f: (f.commit_date, f.commit_hash, f.benchmark, f.params), reverse=True)
    return findings


def _codes(column: pd.Series) -> np.ndarray:
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy().astype(np.int64)
    return pd.factorize(column)[0].astype(np.int64)


def findings_frame(findings: Sequence[Finding]) -> pd.DataFrame:
    """Findings as a DataFrame (one row each, newest commit first) for tables and pages."""
    columns = [f.name for f in dataclasses.fields(Finding)]
    return pd.DataFrame([dataclasses.astuple(f) for f in findings], columns=columns)
