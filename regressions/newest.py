"""A change at the newest one or two commits of a series: clear at once, suspected, or nothing.

The step fit and the tests in statistics.py need three commits at a new level before they say
anything. A CI gate judges the commit it runs for, so this judges the split before the last one
or two commits (m = 1 or 2 commits at the new level) as a person reading ``asv compare`` beside
the history would:

1. asv's own rule (``asv.commands.compare._is_result_better``, which asks ``asv._stats.is_different``
   about the raw samples: Mann-Whitney, p < 0.002; the 99 % CIs when no samples were recorded):
   every new commit is beyond the threshold from the level before and its samples differ from
   those of the commits just before.
2. The noise the history shows. Samples say nothing about run-to-run noise (a whole run can land
   6 % off with every sample agreeing), so the weakest new commit must also be far outside the
   commit-to-commit noise of the history: z = its distance from the level before, in units of
   that noise (the larger of a robust and a plain estimate from the history's commit-to-commit
   differences, the differences across accepted changes left out); the chance that m runs in a
   row land that far out by noise alone, Q(z)^m with Q Student's t tail (the noise is only
   estimated, from few commits in a short history), at most ``clear_p``; and it must go further
   than any m runs in a row in the window before went and came back.

Clear: both. Suspected: asv's rule and Q(z)^m at most ``newest_suspect_p``; the gate fails on it
only when asked (``--strict``), and the next commits confirm or drop it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from asv.commands.compare import _is_result_better
from scipy.stats import t as student_t

SAMPLE_COMMITS_BEFORE = 3  # commits whose samples stand for "before" in asv's rule


@dataclass(frozen=True)
class NewestEvidence:
    clear: bool
    p_value: float  # Q(z)^m: chance that m runs in a row land this far out by noise
    z: float  # weakest new commit, in commit-to-commit noise units
    sign: float  # +1: the new commits are higher, -1: lower


def robust_sigma(x: np.ndarray) -> float:
    """Commit-to-commit noise: MAD of first differences (steps barely move it)."""
    d = np.diff(x)
    if len(d) < 2:
        return float("nan")
    return robust_sigma_of_differences(d)


def history_noise(x: np.ndarray, breaks=()) -> tuple[float, int]:
    """(commit-to-commit sigma, differences it is estimated from) of a history, leaving out the
    differences across the changes at ``breaks``. The larger of the robust estimate (MAD) and
    the plain one (standard deviation): the MAD alone, from a few dozen differences, was often
    too small, and a 6 % run in 2 % noise then looked like 5 sigma."""
    d = np.diff(x)
    keep = np.ones(len(d), dtype=bool)
    for b in breaks:
        if 1 <= b <= len(d):
            keep[b - 1] = False
    d = d[keep]
    if len(d) < 2:
        return float("nan"), len(d)
    return max(robust_sigma_of_differences(d), float(np.std(d, ddof=1)) / math.sqrt(2)), len(d)


def robust_sigma_of_differences(d: np.ndarray) -> float:
    mad = np.median(np.abs(d - np.median(d)))
    return float(1.4826 * mad / math.sqrt(2))


def judge_newest(x: np.ndarray, y: np.ndarray, k: int, start: int, settings, logspace: bool,
                 ci_low=None, ci_high=None, samples=None, breaks=()) -> NewestEvidence | None:
    """Is there a change at position ``k`` of ``x`` (the fitted scale, log values when
    ``logspace``), with 1 or 2 commits after it? ``y``: the measured values; ``start``: the
    first position of the current level (after the last accepted change); ``breaks``: the
    accepted changes before k."""
    before = x[max(start, k - settings.window):k]
    after = x[k:]
    if len(before) < settings.min_before or not 1 <= len(after) < settings.min_after_suspected:
        return None
    level = float(np.median(before))
    sign = 1.0 if np.median(after) > level else -1.0
    weakest = float(np.min(sign * (after - level)))
    needed = math.log1p(settings.threshold) if logspace else settings.threshold * (abs(level) or 1.0)
    if weakest < needed:
        return None
    if logspace and not all(_asv_rule(y, j, k, start, sign, math.exp(level), settings.threshold,
                                      ci_low, ci_high, samples) for j in range(k, len(x))):
        return None
    sigma, n_differences = history_noise(x[:k], breaks)
    # a new run's noise, plus that of the median of the window before
    spread = sigma * math.sqrt(1 + math.pi / (2 * len(before))) if sigma > 0 else 0.0
    z = weakest / spread if spread > 0 else math.inf
    m = len(after)
    p = float(student_t.sf(z, max(1, n_differences - 1))) ** m
    if p > settings.newest_suspect_p:
        return None
    clear = p <= settings.clear_p and weakest > _largest_excursion(sign * (before - level), m)
    return NewestEvidence(clear, p, z, sign)


def further_step_is_clear(x: np.ndarray, k: int, since: int, sign: float, settings, logspace: bool,
                          breaks=()) -> bool:
    """Whether the commits from ``k`` on step clearly past the commits ``since..k`` (a suspected
    change's first commits): beyond the threshold, and as far outside the history's noise as a
    clear change must be (the same Q(z)^m <= clear_p)."""
    between, after = x[since:k], x[k:]
    level = float(np.median(between))
    weakest = float(np.min(sign * (after - level)))
    needed = math.log1p(settings.threshold) if logspace else settings.threshold * (abs(level) or 1.0)
    if weakest < needed:
        return False
    sigma, n_differences = history_noise(x[:k], breaks)
    if not sigma > 0:
        return True
    z = weakest / (sigma * math.sqrt(1 + 1 / len(between)))
    return float(student_t.sf(z, max(1, n_differences - 1))) ** len(after) <= settings.clear_p


def _largest_excursion(deviations: np.ndarray, m: int) -> float:
    """The furthest that m runs in a row went (the weakest of each run of m), -inf if none."""
    if len(deviations) < m:
        return -math.inf
    runs = np.lib.stride_tricks.sliding_window_view(deviations, m).min(axis=1)
    return float(runs.max())


def _asv_rule(y, j: int, k: int, start: int, sign: float, level: float, threshold: float,
              ci_low, ci_high, samples) -> bool:
    """asv compare's verdict on commit ``j`` against the level before ``k``: beyond the factor
    1 + threshold in the direction ``sign`` and, where asv has the data, significantly different
    (samples of up to SAMPLE_COMMITS_BEFORE commits before k pooled)."""
    first = max(start, k - SAMPLE_COMMITS_BEFORE)
    pooled = [v for i in range(first, k) for v in (_samples_at(samples, i) or [])]
    before_ss = (_stats_at(ci_low, ci_high, k - 1, bool(pooled)), pooled or None)
    new_samples = _samples_at(samples, j)
    new_ss = (_stats_at(ci_low, ci_high, j, bool(new_samples)), new_samples)
    factor = 1.0 + threshold
    if sign > 0:  # the new commit is higher: asv says the level before is "better" by the factor
        return bool(_is_result_better(level, float(y[j]), before_ss, new_ss, factor))
    return bool(_is_result_better(float(y[j]), level, new_ss, before_ss, factor))


def _samples_at(samples, i: int) -> list | None:
    if samples is None or not 0 <= i < len(samples) or not samples[i]:
        return None
    return [float(v) for v in samples[i] if v is not None and math.isfinite(float(v))] or None


def _stats_at(ci_low, ci_high, i: int, has_samples: bool) -> dict | None:
    """asv's stats dict for commit i: its 99 % CI; an unknown CI with samples present is an
    infinite one (asv's fallback then says "not different", as it would); None without either."""
    a = float(ci_low[i]) if ci_low is not None and 0 <= i < len(ci_low) else math.nan
    b = float(ci_high[i]) if ci_high is not None and 0 <= i < len(ci_high) else math.nan
    if math.isnan(a) or math.isnan(b):
        return {"ci_99_a": -math.inf, "ci_99_b": math.inf} if has_samples else None
    return {"ci_99_a": a, "ci_99_b": b}
