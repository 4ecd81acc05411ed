"""A series' run-to-run noise, from its own history (pure numpy; no Dash, no torch).

One run's samples say how steady that run was, not how far the next run may land: a whole run
can sit 3 % off with all 15 of its samples agreeing. So the noise a change is judged against
comes from the history of log values:

- ``sigma``: the spread of one run, robustly from successive differences (MAD of the first
  differences / sqrt 2: a level step moves one difference, not the estimate);
- the noise *class*: a runner that turned bimodal (a share of its runs land on a second level,
  ``gap`` away) is a kind of noise, not a level. It shows as two groups of runs far apart
  against the spread within each (series_noise). A newest run that lands on that
  other level is explained by the noise class (:meth:`SeriesNoise.explains`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MAD_TO_SIGMA = 1.4826  # a normal sigma from a median absolute deviation
SEPARATION_SIGMAS = 4.0  # bimodal: the two levels' centres this many within-level sigmas apart
MIN_MODE_SHARE = 0.1  # bimodal: at least this share of the runs off the main level, on one side
MIN_MODE_RUNS = 3  # ... and at least this many
MODE_SIGMAS = 3.0  # a run within this many sigmas of the second level is explained by it


@dataclass(frozen=True)
class SeriesNoise:
    sigma: float  # run-to-run sigma of log values (NaN: too short a history)
    n: int  # differences it was estimated from
    gap: float = 0.0  # a bimodal runner's second level, log units from the main one (0: none)
    share: float = 0.0  # the share of runs on it

    @property
    def bimodal(self) -> bool:
        return self.gap != 0.0

    def explains(self, deviation: float) -> bool:
        """Whether a run ``deviation`` (log units) from the main level is this noise's own second
        level: the runner is bimodal that way and the run lies within MODE_SIGMAS of that level."""
        if not self.bimodal or not self.sigma > 0 or deviation * self.gap <= 0:
            return False
        return abs(deviation - self.gap) <= MODE_SIGMAS * self.sigma


def robust_sigma(logs: np.ndarray) -> float:
    """One run's sigma from the MAD of successive differences (NaN below 3 values)."""
    d = np.diff(np.asarray(logs, dtype=float))
    if len(d) < 2:
        return math.nan
    return float(MAD_TO_SIGMA * np.median(np.abs(d - np.median(d))) / math.sqrt(2))


def series_noise(logs: np.ndarray) -> SeriesNoise:
    """The noise model of one stretch of a series at one level (log values, oldest first).

    Bimodal: the best split of the sorted values in two (least within-group squares, as 1-D
    two-means) leaves a minority of at least MIN_MODE_SHARE (and MIN_MODE_RUNS runs) whose centre
    lies SEPARATION_SIGMAS of the within-group sigma from the other's; one normal level split so
    gives about 2.7. The sigma is then the within-group one (successive differences across the
    two levels would inflate it)."""
    x = np.asarray(logs, dtype=float)
    sigma = robust_sigma(x)
    n = len(x)
    if not sigma > 0 or n < 2 * MIN_MODE_RUNS:
        return SeriesNoise(sigma, max(n - 1, 0))
    xs = np.sort(x)
    j = np.arange(1, n)
    c1, c2 = np.cumsum(xs)[:-1], np.cumsum(xs ** 2)[:-1]
    t1, t2 = xs.sum() - c1, (xs ** 2).sum() - c2
    within = (c2 - c1 ** 2 / j) + (t2 - t1 ** 2 / (n - j))
    best = int(np.argmin(within))
    left, right = xs[:best + 1], xs[best + 1:]
    minority = min(len(left), len(right))
    spread = math.sqrt(float(within[best]) / max(n - 2, 1))
    centre_gap = float(right.mean() - left.mean())
    if minority < max(MIN_MODE_RUNS, MIN_MODE_SHARE * n) or not centre_gap >= SEPARATION_SIGMAS * spread:
        return SeriesNoise(sigma, n - 1)
    other = right if len(right) < len(left) else left
    return SeriesNoise(spread, n - 1, float(other.mean() - np.median(x)), len(other) / n)
