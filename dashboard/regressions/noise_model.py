"""A series' run-to-run noise, from its own history (pure numpy; no Dash, no torch).

One run's samples say how steady that run was, not how far the next run may land: a whole run
can sit 3 % off with all 15 of its samples agreeing. So the noise a change is judged against
comes from the history of log values:

- ``sigma``: the spread of one run, robustly from successive differences (MAD of the first
  differences / sqrt 2: a level step moves one difference, not the estimate);
- the noise *class*: a runner that turned bimodal (a share of its runs land on a second level,
  ``gap`` away) is a kind of noise, not a level. It shows as a cluster of runs well outside the
  robust spread, all on one side and close to each other. A newest run that lands on that
  other level is explained by the noise class (:meth:`SeriesNoise.explains`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MAD_TO_SIGMA = 1.4826  # a normal sigma from a median absolute deviation
OUTSIDE_SIGMAS = 3.0  # a run this far from the level (robust sigmas) is off the main level
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
    """The noise model of one stretch of a series at one level (log values, oldest first)."""
    x = np.asarray(logs, dtype=float)
    sigma = robust_sigma(x)
    if not sigma > 0:
        return SeriesNoise(sigma, max(len(x) - 1, 0))
    # the main level and its spread from the runs near it (a second mode pulls a plain MAD)
    level = float(np.median(x))
    r = x - level
    gap, share = 0.0, 0.0
    for side in (1.0, -1.0):
        off = r[side * r > OUTSIDE_SIGMAS * sigma]
        if len(off) >= MIN_MODE_RUNS and len(off) >= MIN_MODE_SHARE * len(x):
            centre = float(np.median(off))
            # a second level: its runs close to each other, not a tail of slow runs
            if float(np.median(np.abs(off - centre))) * MAD_TO_SIGMA <= max(2 * sigma, abs(centre) / 4):
                if len(off) / len(x) > share:
                    gap, share = centre, len(off) / len(x)
    return SeriesNoise(sigma, len(x) - 1, gap, share)
