"""Find the commits where a benchmark series changed level (pure; no Dash here).

One series = one (machine, env_name, benchmark, parameter combination), its measured
values in commit-date order. Per series:

1. Candidate change points come from asv's own step fit
   (``asv.step_detect.solve_potts_approx``: an L1 Potts fit, penalty from the series'
   robust noise; points are not weighted by their 99 % CI by default, see
   ``DetectorSettings.use_ci_weights``), run on log(value) so that noise and steps are
   relative. When the fit has no change among the last ``TAIL`` commits, the best single
   split there is a candidate too, so a CI gate sees a change at the newest commits before
   the fit has the evidence to split; being the best of several, it is judged at ``alpha``
   divided by the number of splits searched (and, until that is reached, by the rules for a
   suspected change below).
2. A candidate is reported only if the change between the windows either side
   (medians of up to ``window`` per-commit values) is not significantly smaller than
   ``threshold`` (estimate + 1.645 standard errors >= threshold), and it is significant against the commit-to-commit noise: a two-sided Mann-Whitney U test
   (``scipy.stats.mannwhitneyu``) of the per-commit values before vs after, p < ``alpha``.
   Using per-commit values, not pooled samples, keeps run-to-run noise in the test.
   A change needs ``min_after`` commits after it to be *confirmed*; with fewer (at least
   ``min_after_suspected``, only at the end of the history) it is *suspected* when it is
   far outside the series' robust noise, every one of those commits shows the change on
   its own (slow runs are not a level) and, where samples were recorded, asv's own compare
   rule also calls it different (Mann-Whitney on the samples, p < 0.002).
3. Slow drifts and small steps the fit left whole: in each stretch between accepted
   changes, the best single split (by rank, standardised) is judged on both whole sides,
   its significance by Pettitt's test (which allows for having picked the best of many
   splits), p < ``gradual_alpha``; reported as kind "gradual". Same-direction neighbours
   are merged into one change (a drift fitted as a staircase) when fewer than
   ``merge_gap`` commits apart or when a straight ramp fits the stretch as well as the
   staircase (BIC).
4. Where exactly: a small change in noise cannot be placed to the commit, so each change
   also carries an interval of plausible positions (:func:`change_interval`: the splits
   whose one-change fit is within a likelihood-ratio cut of the best; ``Change.index_low``
   / ``index_high``, ``Finding.earliest_commit`` / ``latest_commit``).
5. Direction: :func:`metric_direction` says whether lower or higher is better, so a rising
   TFLOP/s is an improvement and a falling one a regression.

``find_changes(frame)`` returns a list of :class:`Finding`; ``findings_frame`` turns it
into a DataFrame for a page. ``python -m dashboard.regressions`` is the CI gate.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import sys
import warnings
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.stats import mannwhitneyu

from asv import step_detect  # pinned asv==0.6.6: step_detect is not a stable asv API

from dashboard.data import STATUS_OK, LoadReport, ResultsDirError, load_results

LOWER, HIGHER = "lower", "higher"
# Newest commits searched for a change the step fit cannot split yet. With 5, a change 6-7
# commits old had left the search before the fit split it, and the gate passed again for a
# commit or two (20 of 120 histories with an 8-15 % step); with 8, 3 of 120.
TAIL = 8
REGRESSION, IMPROVEMENT = "regression", "improvement"


# --------------------------------------------------------------------------- direction

# Units and name fragments whose bigger numbers are better; everything else (seconds,
# bytes, counts, asv's default "unit") is lower-is-better, as asv assumes.
_HIGHER_UNIT = re.compile(r"(/\s*s(ec(ond)?)?$)|(per[\s_-]?s(ec(ond)?)?$)|^(x|speedup|ratio|%\s*of\s*peak)$", re.I)
_HIGHER_NAME = re.compile(
    r"(tflops|gflops|flops|gbps|tbps|throughput|bandwidth|speedup|higher_is_better|roofline_fraction|ops_per_s)", re.I
)


def metric_direction(
    benchmark: str,
    unit: str | None = None,
    overrides: Mapping[str, str] | Callable[[str, str | None], str | None] | None = None,
    metadata: Mapping | None = None,
) -> str:
    """"lower" or "higher" (is better) for a benchmark.

    Checked in order: ``overrides`` (a mapping of regex on the benchmark name -> "lower" /
    "higher", or a function returning one of those or None); a ``higher_is_better``
    attribute the benchmark declared (asv copies benchmark attributes into
    benchmarks.json, passed as ``metadata``); the unit (TFLOP/s, GB/s, speedup, x);
    the benchmark name (tflops, gbps, throughput, bandwidth, speedup). Default: lower.
    """
    if overrides is not None:
        if callable(overrides):
            chosen = overrides(benchmark, unit)
            if chosen is not None:
                return _checked_direction(chosen)
        else:
            for pattern, chosen in overrides.items():
                if re.search(pattern, benchmark):
                    return _checked_direction(chosen)
    if metadata is not None and isinstance(metadata.get("higher_is_better"), bool):
        return HIGHER if metadata["higher_is_better"] else LOWER
    if unit and _HIGHER_UNIT.search(unit.strip()):
        return HIGHER
    if _HIGHER_NAME.search(benchmark.rsplit(".", 1)[-1]):
        return HIGHER
    return LOWER


def _checked_direction(value: str) -> str:
    if value not in (LOWER, HIGHER):
        raise ValueError(f"direction must be {LOWER!r} or {HIGHER!r}, got {value!r}")
    return value


# --------------------------------------------------------------------------- one series


@dataclass(frozen=True)
class DetectorSettings:
    threshold: float = 0.05  # smallest relative change worth reporting
    # The measured change may fall short of the threshold by this many standard errors
    # (one-sided 95 %): a true 5 % step measured as 4.6 % is not significantly below 5 %.
    threshold_z: float = 1.645
    alpha: float = 0.001  # Mann-Whitney p-value needed (per-commit values either side)
    # Pettitt p-value needed for a "gradual" change. That search picks the best split of a
    # whole stretch, so it gets a stricter level: on the development histories (seeds 1-3,
    # 5-7 of tools/measure_regression_detection.py) 5e-4 instead of 1e-3 cut the false
    # alarms within 5 commits of nothing from 14 to 7 for 1-2 % of the 5 % steps' recall.
    # (5e-4 for the Mann-Whitney test too made alarms later: with 4 commits after a change
    # its smallest possible p is 5.2e-4.)
    gradual_alpha: float = 0.0005
    window: int = 15  # commits per side compared
    min_before: int = 5  # history needed before a change can be judged
    min_after: int = 4  # commits at the new level before a change is confirmed
    # Commits at the new level before a change at the newest commits is suspected. With 2, two
    # slow runs in a row (2 % of runs 15-50 % slow) made half of the CI gate's false failures,
    # 0.6-0.8 per 1,000 runs of series with no change (tools/measure_regression_detection.py,
    # gate row, seeds 1-3).
    min_after_suspected: int = 3
    suspect_z: float = 5.0  # robust-noise units a not-yet-confirmed change needs
    sample_alpha: float = 0.002  # asv compare's Mann-Whitney threshold on raw samples
    # Off: the 99 % CI of one run's samples says nothing about run-to-run noise (it is the
    # min-max of 10 samples, blown up by one slow warm-up sample), so 1/CI weights mislead the fit.
    use_ci_weights: bool = False  # True: weight points by 1/CI width in the step fit, like asv
    merge_gap: int = 10  # same-direction changes closer than this are one gradual change
    gamma_factor: float = 5.0  # step-fit penalty per level, in units of sigma * ln(n)


@dataclass(frozen=True)
class Change:
    """A change in one series, by position in that series' measured values."""

    index: int  # first position at the new level
    before: float  # median of the window before (original units)
    after: float  # median of the window after
    relative_change: float  # after / before - 1
    p_value: float
    score: float  # size of the change in robust noise units (commit-to-commit sigma)
    confirmed: bool
    kind: str  # "step" (found by the step fit) or "gradual" (whole-stretch comparison)
    present_at_newest: bool
    # Plausible positions of the change: [index_low, index_high] (see change_interval);
    # -1 when unknown (then use index).
    index_low: int = -1
    index_high: int = -1


def detect_changes(
    values: Sequence[float],
    settings: DetectorSettings = DetectorSettings(),
    ci_low: Sequence[float] | None = None,
    ci_high: Sequence[float] | None = None,
    samples: Sequence[Sequence[float] | None] | None = None,
) -> list[Change]:
    """Level changes in one series of finite per-commit values (oldest first).

    Direction-neutral: it reports increases and decreases; :func:`find_changes` names them.
    """
    y = np.asarray(values, dtype=float)
    n = len(y)
    if n < settings.min_before + settings.min_after_suspected or not np.isfinite(y).all():
        return []
    logspace = bool((y > 0).all())
    x = np.log(y) if logspace else y
    sigma = _robust_sigma(x)
    weights = _ci_weights(ci_low, ci_high, logspace) if settings.use_ci_weights else None
    fitted = _asv_steps(x, weights, sigma, settings)

    accepted: list[Change] = []
    segment_start = 0
    for i, k in enumerate(fitted):
        next_k = fitted[i + 1] if i + 1 < len(fitted) else n
        change = _judge_at(x, k, segment_start, next_k, sigma, samples, settings, logspace)
        if change is not None:
            accepted.append(change)
            segment_start = k
    # a change among the newest commits that the fit cannot split yet (only splits with
    # min_after_suspected commits after them can be judged at all)
    first, stop = max(1, n - TAIL, segment_start + 1), n - settings.min_after_suspected + 1
    tail = best_split(x, first, stop, max(segment_start, n - TAIL - settings.window), n) if first < stop else None
    if tail is not None and all(abs(a.index - tail) > 2 for a in accepted):
        # the best of stop - first splits: Bonferroni, else the other half of the gate's false
        # failures (see min_after_suspected)
        tail_settings = dataclasses.replace(settings, alpha=settings.alpha / (stop - first))
        change = _judge_at(x, tail, segment_start, n, sigma, samples, tail_settings, logspace)
        if change is not None:
            accepted.append(change)

    accepted += _gradual(x, accepted, sigma, settings, logspace)
    accepted = _merge_staircases(sorted(accepted, key=lambda c: c.index), x, settings)
    out = []
    for i, c in enumerate(accepted):
        lo = accepted[i - 1].index if i > 0 else 0
        hi = accepted[i + 1].index if i + 1 < len(accepted) else n
        low, high = change_interval(x, c.index, lo, hi, settings.window)
        out.append(dataclasses.replace(_with_presence(c, x, accepted, settings, logspace),
                                       index_low=low, index_high=high))
    return out


CHANGE_INTERVAL_LEVEL = 3.84  # chi-square(1) 95 % quantile: the likelihood-ratio cut


def change_interval(x, k: int, lo: int, hi: int, window: int = 15,
                    level: float = CHANGE_INTERVAL_LEVEL) -> tuple[int, int]:
    """The positions where a change at ``k`` in ``x[lo:hi]`` (no other change there) may
    as well be: every split j within ``window`` commits of k whose one-change fit of
    x[max(lo, k - window):min(hi, k + window)] is not significantly worse than the best
    split's (Laplace likelihood, the L1 cost divided by the mean absolute deviation;
    2 x log-likelihood ratio <= ``level``). Returns (lowest, highest) such j, k included.
    Uses only the data, so any detector's reported position can get one the same way."""
    x = np.asarray(x, dtype=float)
    start, end = max(lo, k - window), min(hi, k + window)
    if not (start < k < end) or end - start < 4:
        return k, k
    seg = x[start:end].tolist()
    head = np.fromiter((d for _, d in step_detect.rolling_median_dev(seg)), float, len(seg))
    tail = np.fromiter((d for _, d in step_detect.rolling_median_dev(seg[::-1])), float, len(seg))[::-1]
    ks = np.arange(start + 1, end)
    cost = head[ks - start - 1] + tail[ks - start]
    best = float(cost.min())
    scale = best / len(seg)  # Laplace scale (maximum likelihood)
    if not scale > 0:
        return k, k
    plausible = ks[(cost - best) / scale <= level / 2]
    return int(min(plausible.min(), k)), int(max(plausible.max(), k))


def _asv_steps(x: np.ndarray, weights: list | None, sigma: float, s: DetectorSettings) -> list[int]:
    """Start positions of the fitted levels after the first, from asv's Potts solver.

    asv's automatic penalty (detect_steps / solve_potts_autogamma) missed plain bumps of
    15 % over 12 commits at 2 % noise in our tests, so the penalty is set from the series'
    own noise instead: a split must cut the weighted L1 cost by ``gamma_factor * sigma *
    ln(n)`` (BIC-like). Every split is still judged by the tests below.
    """
    n = len(x)
    if not sigma > 0:
        sigma = float(np.std(x)) or 1e-12
    w = [1.0] * n
    if weights is not None:
        known = [v for v in weights if v is not None]
        scale = float(np.median(known)) if known else 1.0
        w = [1.0 if v is None else v / scale for v in weights]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        right, _, _ = step_detect.solve_potts_approx(x.tolist(), w, gamma=s.gamma_factor * sigma * math.log(n),
                                                     min_size=1)
    return [int(r) for r in right[:-1]]


def best_split(x: np.ndarray, first: int, stop: int, start: int, end: int) -> int:
    """The k in [first, stop) where one level change fits x[start:end] best (least L1 cost).

    O(n log n): prefix and suffix L1 deviations from a rolling median (asv's
    ``rolling_median_dev``), instead of two medians per candidate split.
    """
    seg = x[start:end].tolist()
    head = np.fromiter((d for _, d in step_detect.rolling_median_dev(seg)), float, len(seg))
    tail = np.fromiter((d for _, d in step_detect.rolling_median_dev(seg[::-1])), float, len(seg))[::-1]
    ks = np.arange(first, stop)
    # cost(k) = dev(x[start:k]) + dev(x[k:end]); head[j] is the deviation of the first j+1 points
    cost = head[ks - start - 1] + tail[ks - start]
    return int(ks[int(np.argmin(cost))])


def _robust_sigma(x: np.ndarray) -> float:
    """Commit-to-commit noise: MAD of first differences (steps barely move it)."""
    d = np.diff(x)
    if len(d) < 2:
        return float("nan")
    mad = np.median(np.abs(d - np.median(d)))
    return float(1.4826 * mad / math.sqrt(2))


def _ci_weights(ci_low, ci_high, logspace: bool) -> list | None:
    """asv's weight 2 / |ci_99_b - ci_99_a| (on the scale the fit runs on); None if unknown."""
    if ci_low is None or ci_high is None:
        return None
    a = np.asarray(ci_low, dtype=float)
    b = np.asarray(ci_high, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        width = np.abs(np.log(b) - np.log(a)) if logspace else np.abs(b - a)
        w = 2.0 / width
    w[~np.isfinite(w) | (w <= 0)] = np.nan
    if np.isnan(w).all():
        return None
    return [None if math.isnan(v) else float(v) for v in w]


def _level(window: np.ndarray, logspace: bool) -> float:
    m = float(np.median(window))
    return math.exp(m) if logspace else m


def _relative(before: float, after: float) -> float:
    return after / before - 1 if before != 0 else math.copysign(math.inf, after)


def _big_enough(before, after, sigma, s: DetectorSettings, logspace: bool) -> bool:
    """The change is not significantly smaller than the threshold."""
    delta = abs(float(np.median(after) - np.median(before)))
    if not logspace:  # compare relative to the level before
        scale = abs(float(np.median(before))) or 1.0
        delta, sigma = delta / scale, sigma / scale
    # 1.2533: standard error of a median relative to that of a mean (normal noise)
    stderr = 1.2533 * sigma * math.sqrt(1 / len(before) + 1 / len(after)) if sigma > 0 else 0.0
    needed = math.log1p(s.threshold) if logspace else s.threshold
    return delta + s.threshold_z * stderr >= needed


def _judge_at(x, k, segment_start, next_k, sigma, samples, s: DetectorSettings, logspace) -> Change | None:
    before = x[max(segment_start, k - s.window):k]
    after = x[k:min(next_k, k + s.window)]
    if len(before) < s.min_before:
        return None
    return _judge(before, after, k, next_k == len(x), sigma, samples, s, logspace)


def _judge(before, after, k, at_tail, sigma, samples, s: DetectorSettings, logspace) -> Change | None:
    if len(after) < s.min_after_suspected or not _big_enough(before, after, sigma, s, logspace):
        return None
    lb, la = _level(before, logspace), _level(after, logspace)
    rel = _relative(lb, la)
    delta = abs(float(np.median(after) - np.median(before)))
    score = delta / sigma if sigma > 0 else math.inf
    if len(after) >= s.min_after:
        p = float(mannwhitneyu(before, after, alternative="two-sided").pvalue)
        if p < s.alpha:
            return Change(k, lb, la, rel, p, score, True, "step", True)
        if not at_tail:
            return None
        # At the newest commits a change the test cannot confirm yet (4 commits after it
        # cannot reach a Bonferroni-corrected alpha) stays suspected by the rules below, so the
        # gate does not flip back to pass while the evidence grows.
    elif not at_tail:
        return None  # a short excursion inside the history: outliers, not a new level
    # Every commit after it must show the change on its own (a median of two points is one
    # outlier away from anything): the weakest of them sets the size and the z.
    sign = 1.0 if np.median(after) > np.median(before) else -1.0
    weakest = float(np.min(sign * (after - np.median(before))))
    needed = math.log1p(s.threshold) if logspace else s.threshold * (abs(float(np.median(before))) or 1.0)
    if weakest < needed:
        return None
    z = weakest / sigma / math.sqrt(1 / len(before) + 1 / len(after)) if sigma > 0 else math.inf
    if z < s.suspect_z:
        return None
    p = _samples_p_value(samples, k, len(after))
    if p is None:
        p = float(math.erfc(z / math.sqrt(2)))  # normal approximation
    elif p >= s.sample_alpha:
        return None
    return Change(k, lb, la, rel, p, score, False, "step", True)


def _samples_p_value(samples, k: int, n_after: int) -> float | None:
    """asv compare's test on raw samples: the tail commits vs the commits just before."""
    if samples is None:
        return None
    after = [v for s in samples[k:k + n_after] if s for v in s]
    before = [v for s in samples[max(0, k - 3):k] if s for v in s]
    if len(after) < 5 or len(before) < 5:
        return None
    return float(mannwhitneyu(before, after, alternative="two-sided").pvalue)


def _gradual(x, accepted: list[Change], sigma, s: DetectorSettings, logspace) -> list[Change]:
    """One more change per stretch the step fit left whole: a slow drift, or a step too
    small for the fit. Split where one level change fits best; both whole sides compared."""
    bounds = [0, *[c.index for c in accepted], len(x)]
    found = []
    for start, end in zip(bounds[:-1], bounds[1:]):
        if end - start < 2 * s.min_before + s.min_after:
            continue
        k = _rank_split(x, start + s.min_before, end - s.min_after + 1, start, end)
        before, after = x[start:k], x[k:end]
        if not _big_enough(before, after, sigma, s, logspace):
            continue
        # k is the best of many splits, so a plain two-sample test at k is far too
        # optimistic; Pettitt's test asks whether *any* split of the stretch is a change.
        p = _pettitt_p(x[start:end])
        if p >= s.gradual_alpha:
            continue
        lb, la = _level(before, logspace), _level(after, logspace)
        score = abs(float(np.median(after) - np.median(before))) / sigma if sigma > 0 else math.inf
        found.append(Change(k, lb, la, _relative(lb, la), p, score, True, "gradual", True))
    return found


def _ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks, ties given their average rank (as scipy.stats.rankdata)."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    ends = np.r_[starts[1:], len(x)]
    avg = (starts + ends + 1) / 2.0  # mean of ranks starts+1 .. ends
    ranks = np.empty(len(x))
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def _rank_split(x: np.ndarray, first: int, stop: int, start: int, end: int) -> int:
    """The k in [first, stop) where x[start:k] and x[k:end] differ most by rank
    (the Mann-Whitney / Pettitt statistic): robust to outliers like a median split, but
    as precise as a split by means under normal noise."""
    r = _ranks(x[start:end])
    n = end - start
    t = np.arange(first, stop) - start  # points before the split
    u = 2.0 * np.cumsum(r)[t - 1] - t * (n + 1)
    return int(first + int(np.argmax(np.abs(u) / np.sqrt(t * (n - t)))))


def _pettitt_p(x: np.ndarray) -> float:
    """Pettitt's (1979) test for one change anywhere in x: approximate p-value of
    K = max_t |U_t| (U_t the Mann-Whitney statistic of x[:t] vs x[t:], centred)."""
    n = len(x)
    if n < 3:
        return 1.0
    r = _ranks(x)
    t = np.arange(1, n)
    u = 2.0 * np.cumsum(r)[:-1] - t * (n + 1)
    k = float(np.max(np.abs(u)))
    return float(min(1.0, 2.0 * math.exp(-6.0 * k * k / (n ** 3 + n ** 2))))


def _merge_staircases(changes: list[Change], x: np.ndarray, s: DetectorSettings) -> list[Change]:
    """A slow drift is fitted as a staircase. Two consecutive same-direction changes become
    one "gradual" change when they are less than ``merge_gap`` commits apart, or when a
    straight ramp between the level before and the level after fits the stretch as well as
    the staircase (BIC: the ramp has one level fewer). The merged change keeps the first
    one's position (inside the ramp)."""
    merged: list[Change] = []
    for c in changes:
        prev = merged[-1] if merged else None
        if prev is None or (c.relative_change > 0) != (prev.relative_change > 0):
            merged.append(c)
            continue
        if c.index - prev.index < s.merge_gap:
            start = prev.index
        else:
            left = merged[-2].index if len(merged) >= 2 else 0
            right = next((d.index for d in changes if d.index > c.index), len(x))
            start = _ramp_start(x, max(left, prev.index - s.window), prev.index, c.index,
                                min(right, c.index + s.window))
        if start is None:
            merged.append(c)
            continue
        merged[-1] = dataclasses.replace(
            prev, after=c.after, relative_change=_relative(prev.before, c.after), kind="gradual",
            p_value=max(prev.p_value, c.p_value), score=prev.score + c.score,
            confirmed=prev.confirmed and c.confirmed)
    return merged


def _dev(v: np.ndarray, centre: float | None = None) -> float:
    return float(np.abs(v - (np.median(v) if centre is None else centre)).sum())


def _ramp_start(x: np.ndarray, a: int, k1: int, k2: int, b: int) -> int | None:
    """Where a linear ramp from x[a:k1]'s level to x[k2:b]'s starts, if such a ramp fits
    x[a:b] at least as well as the three levels split at k1 and k2 (L1 cost, plus the BIC
    price of the staircase's extra level); None when the middle is a level of its own.
    The ramp's ends are searched within half the middle's length of k1 and k2."""
    if k1 - a < 2 or b - k2 < 2:
        return None
    n = b - a
    staircase = _dev(x[a:k1]) + _dev(x[k1:k2]) + _dev(x[k2:b])
    price = staircase / n * math.log(n) / 2  # Laplace scale x ln(n)/2 per parameter
    half = max(1, (k2 - k1) // 2)
    best, best_start = math.inf, None
    for first in range(max(a + 2, k1 - half), k1 + 1):
        m0 = float(np.median(x[a:first]))
        head = _dev(x[a:first], m0)
        for last in range(k2, min(b - 2, k2 + half) + 1):  # x[last] is the first point at the new level
            m2 = float(np.median(x[last:b]))
            frac = np.arange(1, last - first + 1) / (last - first + 1)
            cost = head + float(np.abs(x[first:last] - (m0 + (m2 - m0) * frac)).sum()) + _dev(x[last:b], m2)
            if cost < best:
                best, best_start = cost, first
    return best_start if best <= staircase + price else None


def _with_presence(c: Change, x, accepted: list[Change], s: DetectorSettings, logspace) -> Change:
    """Still there at the newest commit: the latest level is on the same side of the level
    before this change, by at least half the threshold (noise aside, it was not undone)."""
    last_start = max((a.index for a in accepted), default=0)
    latest = _level(x[max(last_start, len(x) - s.window):], logspace)
    now = _relative(c.before, latest)
    present = now * c.relative_change > 0 and abs(now) >= s.threshold / 2
    return dataclasses.replace(c, present_at_newest=bool(present))


# --------------------------------------------------------------------------- a results frame


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

    def status(self) -> str:
        """Kind, confirmation, presence and position in a few words, for reports and the inbox."""
        parts = [self.kind if self.kind != "step" else "", "" if self.confirmed else "suspected",
                 "present" if self.present_at_newest else "not present now", self.position_note()]
        return ", ".join(p for p in parts if p)

    def position_note(self) -> str:
        """Where else the change may be, for people reading a report; "" when it is pinned."""
        return position_note(self.plausible_commits, self.earliest_commit, self.latest_commit)


def position_note(plausible_commits: int, earliest_commit: str, latest_commit: str) -> str:
    """"could be any of N commits A..B", or "" for a change pinned to one commit (also for
    rows of findings_frame, as the Trends figure shows them)."""
    if plausible_commits <= 1:
        return ""
    return f"could be any of {plausible_commits} commits {earliest_commit[:8]}..{latest_commit[:8]}"


def find_changes(
    frame: pd.DataFrame,
    settings: DetectorSettings = DetectorSettings(),
    direction_overrides: Mapping[str, str] | Callable | None = None,
    benchmarks_meta: Mapping[str, Mapping] | None = None,
    *,
    jobs: int | None = 1,
) -> list[Finding]:
    """Every level change in every series of a frame from :func:`dashboard.data.load_results`.

    Only status "ok" points enter a series; skipped and failed commits are left out.
    ``jobs``: worker processes for the per-series work (1: this process; None: one per CPU).
    """
    ok = frame[frame["status"] == STATUS_OK]
    ok = ok[np.isfinite(ok["value"].to_numpy())]
    if ok.empty:
        return []
    keys = ["machine", "env_name", "benchmark", "params_key"]
    codes = [_codes(ok[k]) for k in keys]
    date_utc = ok["date"].to_numpy(dtype="datetime64[ns]")  # UTC, tz dropped
    date_ns = date_utc.astype(np.int64)
    order = np.lexsort((date_ns, *reversed(codes)))
    stacked = np.stack([c[order] for c in codes], axis=1)
    breaks = np.flatnonzero((np.diff(stacked, axis=0) != 0).any(axis=1)) + 1

    values = ok["value"].to_numpy()[order]
    ci_a = ok["ci_99_a"].to_numpy()[order]
    ci_b = ok["ci_99_b"].to_numpy()[order]
    samples = ok["samples"].to_numpy()[order]
    commits = ok["commit_hash"].astype(str).to_numpy()[order]
    dates = date_utc[order]
    labels = {k: ok[k].astype(str).to_numpy()[order] for k in keys}
    units = ok["unit"].astype(object).to_numpy()[order]
    meta = benchmarks_meta or {}

    bounds = [(int(lo), int(hi)) for lo, hi in zip(np.r_[0, breaks], np.r_[breaks, len(order)])
              if hi - lo >= settings.min_before + settings.min_after_suspected]  # too short: nothing to find
    # Raw samples only matter for a suspected change among the newest commits (asv's compare
    # rule: the TAIL commits searched and the 3 before them), so only that tail is passed on:
    # cheaper to copy and to send to workers.
    keep = TAIL + 3
    tasks = []
    for lo, hi in bounds:
        tail = samples[max(lo, hi - keep):hi]
        has_samples = any(v is not None for v in tail)
        series_samples = [None] * (hi - lo - len(tail)) + list(tail) if has_samples else None
        tasks.append((values[lo:hi], ci_a[lo:hi], ci_b[lo:hi], series_samples))
    if jobs is not None and jobs != 1 and len(tasks) > 1:
        import os
        from concurrent.futures import ProcessPoolExecutor

        workers = jobs or os.cpu_count() or 1
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(_detect_task, [(settings, *t) for t in tasks],
                                    chunksize=max(1, len(tasks) // (8 * workers))))
    else:
        results = [_detect_task((settings, *t)) for t in tasks]

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
                plausible_commits=high - low + 1))
    findings.sort(key=lambda f: (f.commit_date, f.commit_hash, f.benchmark, f.params), reverse=True)
    return findings


def _detect_task(task) -> list[Change]:
    settings, values, ci_a, ci_b, samples = task
    return detect_changes(values, settings, ci_a, ci_b, samples)


def _codes(column: pd.Series) -> np.ndarray:
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy().astype(np.int64)
    return pd.factorize(column)[0].astype(np.int64)


def findings_frame(findings: Sequence[Finding]) -> pd.DataFrame:
    """Findings as a DataFrame (one row each, newest commit first) for tables and pages."""
    columns = [f.name for f in dataclasses.fields(Finding)]
    return pd.DataFrame([dataclasses.astuple(f) for f in findings], columns=columns)


def resolve_commit(frame: pd.DataFrame, commit: str) -> str:
    """Full hash for a (prefix of a) commit present in the results; ValueError otherwise."""
    known = frame["commit_hash"].astype(str).unique()
    matches = sorted({h for h in known if h.startswith(commit.lower())})
    if not matches:
        raise ValueError(f"commit {commit!r} is not in the results")
    if len(matches) > 1:
        raise ValueError(f"commit {commit!r} is ambiguous: {', '.join(m[:12] for m in matches[:5])}")
    return matches[0]


def since_filter(findings: list[Finding], frame: pd.DataFrame, commit: str) -> list[Finding]:
    """Findings at ``commit`` or later (by commit date)."""
    full = resolve_commit(frame, commit)
    start = frame.loc[frame["commit_hash"].astype(str) == full, "date"].min()
    return [f for f in findings if f.commit_date >= start]


# --------------------------------------------------------------------------- CLI


def parse_threshold(text: str) -> float:
    """'5%' -> 0.05, '0.05' -> 0.05, '5' -> 0.05 (a bare number >= 1 is a percentage)."""
    raw = text.strip()
    try:
        value = float(raw.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"threshold {text!r} is not a number or percentage like 5%") from None
    if raw.endswith("%") or value >= 1:
        value /= 100
    if not 0 < value < 10:
        raise argparse.ArgumentTypeError(f"threshold {text!r} must be a positive relative change")
    return value


def _gate(findings: Sequence[Finding], confirmed_only: bool) -> list[Finding]:
    return [f for f in findings if f.direction == REGRESSION and f.present_at_newest
            and (f.confirmed or not confirmed_only)]


def _group_by_commit(findings: Sequence[Finding]) -> list[tuple[tuple, list[Finding]]]:
    groups: dict[tuple, list[Finding]] = {}
    for f in findings:  # already newest first
        groups.setdefault((f.commit_hash, f.commit_date, f.machine, f.env_name), []).append(f)
    for members in groups.values():
        members.sort(key=lambda f: (f.direction != REGRESSION, -abs(f.relative_change)))
    return list(groups.items())


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def render_text(findings, report: LoadReport, header: str, gate: list[Finding]) -> str:
    lines = [header]
    if not findings:
        lines.append("No level changes found.")
    for (commit, date, machine, env), members in _group_by_commit(findings):
        n_reg = sum(f.direction == REGRESSION for f in members)
        lines.append(f"\ncommit {commit[:12]}  {date:%Y-%m-%d %H:%M}  {machine} / {env}: "
                     f"{n_reg} regression(s), {len(members) - n_reg} improvement(s)")
        for f in members:
            lines.append(f"  {f.direction.upper():<11} {f.benchmark}({f.params})  {_fmt(f.before)} -> "
                         f"{_fmt(f.after)} {f.unit or ''}  {f.relative_change:+.1%}  p={f.p_value:.2g}  "
                         f"[{f.status()}; previous {f.previous_commit[:8]}]")
    lines += _report_lines(report)
    lines.append(f"\nGate: {len(gate)} regression(s) present at the newest commit -> "
                 f"{'FAIL' if gate else 'pass'}")
    return "\n".join(lines)


def render_markdown(findings, report: LoadReport, header: str, gate: list[Finding]) -> str:
    lines = [f"## {header}", ""]
    if not findings:
        lines.append("No level changes found.")
    for (commit, date, machine, env), members in _group_by_commit(findings):
        lines += [f"### `{commit[:12]}` ({date:%Y-%m-%d %H:%M}, {machine} / {env})", "",
                  "| change | benchmark | params | before → after | relative | p | status |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for f in members:
            params = f.params.replace("|", "\\|")
            lines.append(f"| {f.direction} | `{f.benchmark}` | {params} | {_fmt(f.before)} → {_fmt(f.after)} "
                         f"{f.unit or ''} | {f.relative_change:+.1%} | {f.p_value:.2g} | {f.status()} |")
        lines.append("")
    problems = _report_lines(report)
    if problems:
        lines += ["### Results that could not be used", ""] + [f"- {p.strip()}" for p in problems[1:]] + [""]
    lines.append(f"**Gate:** {len(gate)} regression(s) present at the newest commit → "
                 f"{'FAIL' if gate else 'pass'}")
    return "\n".join(lines)


def render_json(findings, report: LoadReport, header: str, gate: list[Finding], settings) -> str:
    def finding_dict(f: Finding) -> dict:
        d = dataclasses.asdict(f)
        d["commit_date"] = f.commit_date.isoformat()
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}

    doc = {
        "summary": header,
        "threshold": settings.threshold,
        "commits": [{"commit_hash": c, "date": d.isoformat(), "machine": m, "env_name": e,
                     "findings": [finding_dict(f) for f in members]}
                    for (c, d, m, e), members in _group_by_commit(findings)],
        "load_report": {"loaded_files": len(report.loaded_files),
                        "skipped": [dataclasses.asdict(s) for s in report.skipped],
                        "problems": report.problems},
        "gate": {"failed": bool(gate), "regressions_present_at_newest": len(gate)},
    }
    return json.dumps(doc, indent=2)


def _report_lines(report: LoadReport) -> list[str]:
    if report.ok:
        return []
    return ["\nResults that could not be used:"] + [f"  {line}" for line in report.lines()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dashboard.regressions",
        description="List level changes per commit in an asv results directory; exit 1 when a "
                    "regression is present at the newest commit (a CI gate).")
    parser.add_argument("--results", default="results", help="asv results directory (default: results)")
    parser.add_argument("--machine", help="only this machine (a directory under the results)")
    parser.add_argument("--threshold", type=parse_threshold, default=0.05, help="smallest relative change (default 5%%)")
    parser.add_argument("--since", help="only report changes at this commit (hash or prefix) or later")
    parser.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    parser.add_argument("--confirmed-only", action="store_true",
                        help="gate only on confirmed regressions (not on suspected ones at the last commits)")
    args = parser.parse_args(argv)

    try:
        loaded = load_results(args.results, machine=args.machine)
    except ResultsDirError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    frame, report = loaded.frame, loaded.load_report
    for line in report.lines():
        print(f"warning: {line}", file=sys.stderr)
    if frame.empty:
        where = f"machine {args.machine!r} in " if args.machine else ""
        print(f"error: no usable asv results for {where}{args.results!r}", file=sys.stderr)
        return 2

    settings = DetectorSettings(threshold=args.threshold)
    findings = find_changes(frame, settings, benchmarks_meta=loaded.benchmarks)
    if args.since:
        try:
            findings = since_filter(findings, frame, args.since)
        except ValueError as exc:
            print(f"error: --since: {exc}", file=sys.stderr)
            return 2
    gate = _gate(findings, args.confirmed_only)
    n_series = frame.groupby(["machine", "env_name", "benchmark", "params_key"], observed=True).ngroups
    header = (f"Level changes in {args.results} (threshold {settings.threshold:.0%}, {n_series} series, "
              f"{frame['commit_hash'].nunique()} commits"
              + (f", since {args.since}" if args.since else "") + ")")
    if args.format == "json":
        print(render_json(findings, report, header, gate, settings))
    elif args.format == "markdown":
        print(render_markdown(findings, report, header, gate))
    else:
        print(render_text(findings, report, header, gate))
    return 1 if gate else 0


if __name__ == "__main__":
    sys.exit(main())
