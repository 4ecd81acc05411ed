"""Level changes in one series of per-commit values (pure numpy/scipy; asv's step fit).

A series is one (machine, env_name, benchmark, parameter combination): its measured values in
commit-date order. Per series:

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
   A change at the newest one or two commits is judged by :mod:`newest` (asv's compare rule
   and the noise the history shows): *clear* at once, or *suspected*. A not yet confirmed
   change is clear when its first one or two commits were.
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

Changes are direction-neutral here; findings.py names them regressions or improvements.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.stats import mannwhitneyu, rankdata

from asv import step_detect  # pinned asv==0.6.6: step_detect is not a stable asv API

from regressions.newest import further_step_is_clear, judge_newest, robust_sigma

# Newest commits searched for a change the step fit cannot split yet. With 5, a change 6-7
# commits old had left the search before the fit split it, and the gate passed again for a
# commit or two (20 of 120 histories with an 8-15 % step); with 8, 3 of 120.
TAIL = 8
REGRESSION, IMPROVEMENT = "regression", "improvement"


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
    # A change at the newest one or two commits (newest.py): clear when the chance that its m
    # runs land that far out by noise is at most clear_p (3.7 sigma for one commit after 40
    # commits of history, 5.1 after 10); suspected up to newest_suspect_p (3.3 sigma, 4.3).
    clear_p: float = 3.2e-4
    newest_suspect_p: float = 1e-3
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
    # Clear enough for a gate to fail on: confirmed, or clear from its first commits (newest.py).
    clear: bool = False


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
    if n < settings.min_before + 1 or not np.isfinite(y).all():
        return []
    logspace = bool((y > 0).all())
    x = np.log(y) if logspace else y
    sigma = robust_sigma(x)
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

    # a change at the newest one or two commits, unless one is accepted there already
    newest = _newest_change(x, y, accepted, settings, logspace, ci_low, ci_high, samples)

    accepted += _gradual(x[:newest.index] if newest else x, accepted, sigma, settings, logspace)
    accepted = _merge_staircases(sorted(accepted, key=lambda c: c.index), x, settings)
    # Not merged into a staircase: a new step right after an older one is news for a gate.
    accepted += [newest] if newest else []
    accepted = [c if c.confirmed or c.clear else _with_early_clarity(c, x, y, accepted, settings, logspace,
                                                                     ci_low, ci_high, samples)
                for c in accepted]
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


def _newest_change(x, y, accepted: list[Change], s: DetectorSettings, logspace, ci_low, ci_high,
                   samples) -> Change | None:
    """A change before the newest one or two commits (newest.py); a clear one is preferred, then
    the split the data show most clearly (smallest p). A confirmed change within 2 commits leaves
    no room for one. A suspected one (the tail search's, over a dip just before, say) does not
    hide a clear step at the newest commit: the level before is then the one before that
    suspicion, and the newest commit must also step clearly past the suspicion's own commits."""
    n = len(x)
    found = []
    for k in range(max(1, n - s.min_after_suspected + 1), n):
        near = [c for c in accepted if abs(c.index - k) <= 2]
        if any(c.confirmed or c.index >= k for c in near):
            continue
        start = max((c.index for c in accepted if c.index < k and c not in near), default=0)
        if start >= k:
            continue
        evidence = judge_newest(x, y, k, start, s, logspace, ci_low, ci_high, samples,
                                breaks=[c.index for c in accepted if c.index < k])
        if evidence is None:
            continue
        breaks = [c.index for c in accepted if c.index < k]
        if near and not (k == n - 1 and evidence.clear
                         and further_step_is_clear(x, k, max(c.index for c in near), evidence.sign, s, logspace,
                                                   breaks)):
            continue  # the suspicion already there covers these commits
        found.append((not evidence.clear, k, evidence, start))
    if not found:
        return None
    _, k, evidence, start = min(found, key=lambda f: (f[0], f[2].p_value, f[1]))
    before, after = x[max(start, k - s.window):k], x[k:]
    lb, la = _level(before, logspace), _level(after, logspace)
    sigma = robust_sigma(x[:k])
    score = abs(float(np.median(after) - np.median(before))) / sigma if sigma > 0 else math.inf
    return Change(k, lb, la, _relative(lb, la), evidence.p_value, score, False, "step", True,
                  clear=evidence.clear)


def _with_early_clarity(c: Change, x, y, accepted: list[Change], s: DetectorSettings, logspace, ci_low, ci_high,
                        samples) -> Change:
    """A suspected change is clear when its first one or two commits were (newest.py on the
    history as it stood then, in the same direction)."""
    start = max((a.index for a in accepted if a.index < c.index), default=0)
    for end in range(c.index + 1, min(c.index + s.min_after_suspected, len(x) + 1)):
        evidence = judge_newest(x[:end], y[:end], c.index, start, s, logspace, ci_low, ci_high, samples,
                                breaks=[a.index for a in accepted if a.index < c.index])
        if evidence is not None and evidence.clear and (evidence.sign > 0) == (c.relative_change > 0):
            return dataclasses.replace(c, clear=True)
    return c


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
            return Change(k, lb, la, rel, p, score, True, "step", True, clear=True)
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
    # ... and be nearer the new level than the old one: a commit that is not has the change
    # start after it (a small drift, then a step at the newest commits, is not one change here).
    if weakest < needed or weakest < sign * float(np.median(after) - np.median(before)) / 2:
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
        found.append(Change(k, lb, la, _relative(lb, la), p, score, True, "gradual", True, clear=True))
    return found


def _rank_split(x: np.ndarray, first: int, stop: int, start: int, end: int) -> int:
    """The k in [first, stop) where x[start:k] and x[k:end] differ most by rank
    (the Mann-Whitney / Pettitt statistic): robust to outliers like a median split, but
    as precise as a split by means under normal noise."""
    r = rankdata(x[start:end])  # 1-based, ties given their average rank
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
    r = rankdata(x)
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
            confirmed=prev.confirmed and c.confirmed, clear=prev.clear and c.clear)
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
