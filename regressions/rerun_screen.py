"""The A/B re-run's own candidate screen: series the gate's detector passed over, whose newest
run(s) sit high enough to be worth one session (pure numpy/pandas; no Dash, no torch).

At its own commit a 10 % step in 3 % run noise is about 3 sigma for one run, below the
detector's bar for "suspected", so the gate's items miss most such steps. The screen asks less
and decides nothing: a fused series (or one without controls) measured at a judged commit whose
newest 1 to 4 runs' mean lies more than Z of its own history sigmas (noise_model.py, up to
HISTORY commits before them) beyond the history's median, one-sided the way a regression goes.
They are ranked by the same z of log(fused) - mean(log(controls)) (the controls as covariates:
a runner-wide move cancels, so it ranks last; requiring it too would miss one 10 % step in five
at its own commit: the controls add their noise to the difference). A series whose history, or
a control's, is bimodal (noise_model.py) is not screened: its session is bimodal too, and a few
A B pairs cannot tell a level from a mode (the relative-to-controls effect picked up the
controls' modes and confirmed 6 % "steps" of a clean bimodal series in development); such a
series is left to the detector's own findings. The screened series fail nothing; the re-run (within-session noise) decides, and a
confirmed one becomes a regression in the final verdict (rerun_verdict.py).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from asv_results.commit_order import ORDER
from asv_results.data import STATUS_OK
from regressions.classify import CONTROLS, FUSED, impl_of, with_impl
from regressions.covariate import MEDIAN_SE, SIGMA_WINDOW
from regressions.direction import HIGHER, metric_direction
from regressions.findings import REGRESSION, Finding
from regressions.noise_model import robust_sigma, series_noise

Z = 1.5  # history sigmas (one-sided) that make a series worth a re-run
WINDOWS = (1, 2, 3, 4)  # newest runs averaged
HISTORY = SIGMA_WINDOW  # commits before them that give the level and the noise
MIN_HISTORY = 10  # and more than max(WINDOWS) commits before the newest, so A exists
SCREENED = "screened"  # Finding.kind of a screened series


def screen_z(fused: np.ndarray, controls: np.ndarray, sign: float) -> tuple[float, float, int]:
    """(z, covariate z, window): over WINDOWS, the largest z of the fused series' newest runs
    against the history before them, and for that window the same z of log(fused) -
    mean(log(controls)) (the fused z without controls); -inf when too short. ``fused``: log
    values, oldest first; ``controls``: (n_controls, n) aligned, NaN where missing; ``sign``: +1
    when a regression raises the value."""
    controls = np.atleast_2d(np.asarray(controls, dtype=float)).reshape(-1, len(fused))
    full = np.isfinite(controls).all(axis=0) if len(controls) else np.ones(len(fused), bool)
    diff = fused - controls.mean(axis=0) if len(controls) else None
    best, covariate, at = -math.inf, -math.inf, 0
    for w in WINDOWS:
        history, newest = fused[:-w][-HISTORY:], fused[-w:]
        if len(history) < MIN_HISTORY:
            continue
        noise = series_noise(history)
        if noise.bimodal or any(series_noise(c[:-w][-HISTORY:][np.isfinite(c[:-w][-HISTORY:])]).bimodal
                                for c in controls):
            continue
        z = _z(history, newest, noise.sigma, sign)
        if z <= best:
            continue
        best, covariate, at = z, z, w
        if diff is not None:
            h, n = diff[:-w][-HISTORY:][full[:-w][-HISTORY:]], diff[-w:][full[-w:]]
            if len(h) >= MIN_HISTORY and len(n):
                covariate = _z(h, n, robust_sigma(h), sign)
    return best, covariate, at


def _z(history: np.ndarray, newest: np.ndarray, sigma: float, sign: float) -> float:
    moved = sign * (float(np.mean(newest)) - float(np.median(history)))
    if not sigma > 0:  # a noiseless series: any move is beyond its noise
        return math.inf if moved > 0 else -math.inf
    return moved / (sigma * math.sqrt(1 / len(newest) + MEDIAN_SE ** 2 / len(history)))


def screen(frame: pd.DataFrame, verdict, benchmarks_meta=None) -> list[tuple[Finding, float]]:
    """(finding, covariate z) per screened series of the verdict's judged runs that has no gate
    item, largest covariate z first (a runner-wide move ranks last). The finding names the
    window's first commit (its score is the fused z); before_earliest is the commit before it."""
    judged = {(r.machine, r.env_name): set(r.commits) for r in verdict.runs if r.commits}
    has_item = {(i.change.machine, i.change.env_name, i.change.benchmark, i.change.params) for i in verdict.items}
    ok = frame[(frame["status"] == STATUS_OK) & np.isfinite(frame["value"].to_numpy(dtype=float))
               & (frame["value"].to_numpy(dtype=float) > 0)]
    if ok.empty or not judged:
        return []
    # One sort, then each series as positions into it (groupby keeps the frame's order within a
    # group): a sort and a frame per series cost more than the screen itself (10,000 series).
    ok = ok.sort_values(ORDER if ORDER in ok.columns else "date", kind="stable")
    columns = _Columns(ok)
    groups = ok.groupby(["machine", "env_name", "benchmark", "params_key"], observed=True)
    series = {tuple(map(str, k)): at for k, at in groups.indices.items()}
    meta = benchmarks_meta or {}
    out = []
    for (machine, env, benchmark, params), at in series.items():
        impl = impl_of(params)
        if impl not in (None, FUSED) or (machine, env, benchmark, params) in has_item:
            continue
        tail = at[-(HISTORY + max(WINDOWS)):]  # all that screen_z and _finding look at
        commits = columns.hashes(tail)
        if commits[-1] not in judged.get((machine, env), ()):
            continue
        unit = columns.units.iat[tail[-1]]
        unit = unit if isinstance(unit, str) else None
        sign = -1.0 if metric_direction(benchmark, unit, None, meta.get(benchmark)) == HIGHER else 1.0
        logs = columns.logs[tail]
        controls = [series.get((machine, env, benchmark, with_impl(params, c))) for c in CONTROLS] if impl else []
        aligned = np.array([columns.logs_at(c, columns.codes[tail]) for c in controls if c is not None])
        z, covariate, w = screen_z(logs, aligned.reshape(-1, len(commits)), sign)
        if z > Z:
            found = _finding(columns.dates.iloc[tail], list(commits), logs, w, z, benchmark, params, machine, env,
                             unit, sign)
            out.append((found, covariate))
    out.sort(key=lambda fz: -fz[1])
    return out


class _Columns:
    """The sorted frame's columns the screen reads, as arrays (positions from groupby.indices);
    commits as integer codes (the hashes as strings for the rows a series uses only)."""

    def __init__(self, ok: pd.DataFrame):
        self.codes, self._hashes = pd.factorize(ok["commit_hash"], use_na_sentinel=False)
        self.logs = np.log(ok["value"].to_numpy(dtype=float))
        self.units = ok["unit"]  # read at one row a series: no array of every row's unit and date
        self.dates = ok["date"]

    def hashes(self, at: np.ndarray) -> np.ndarray:
        return np.asarray(self._hashes[self.codes[at]]).astype(str)

    def logs_at(self, at: np.ndarray, commits: np.ndarray) -> np.ndarray:
        """A control series' log values at the commits of codes `commits` (NaN where it has
        none; its newest run at a commit measured twice)."""
        codes = self.codes[at]
        order = np.argsort(codes, kind="stable")  # equal codes keep their order: the last is the newest
        found = np.searchsorted(codes[order], commits, side="right") - 1
        hit = (found >= 0) & (codes[order][np.maximum(found, 0)] == commits)
        return np.where(hit, self.logs[at][order][np.maximum(found, 0)], np.nan)


def _finding(dates, commits, logs, w, z, benchmark, params, machine, env, unit, sign) -> Finding:
    """The screened change: first seen at the window's first commit, but it may have come at any
    commit after the one before the largest window, which is the re-run's A (a step the window
    starts late on, or one the history's median already leans on, still lies between A and B)."""
    before = float(np.exp(np.median(logs[:-w][-HISTORY:])))
    after = float(np.exp(np.mean(logs[-w:])))
    first, base = len(commits) - w, len(commits) - 1 - max(WINDOWS)
    return Finding(benchmark=benchmark, params=params, machine=machine, env_name=env, unit=unit,
                   commit_hash=commits[first], previous_commit=commits[first - 1],
                   commit_date=pd.Timestamp(dates.iat[first]), before=before, after=after,
                   relative_change=after / before - 1, direction=REGRESSION,
                   better="higher" if sign < 0 else "lower", kind=SCREENED, confirmed=False, p_value=math.nan,
                   score=float(z), present_at_newest=True, series_last_commit=commits[-1],
                   earliest_commit=commits[base + 1], latest_commit=commits[-1],
                   plausible_commits=len(commits) - 1 - base, clear=False, before_earliest=commits[base])
