"""The controls as covariates of a fused change (pure numpy; no Dash, no torch).

The eager and torch.compile series of the same case run in the same asv run as the fused one,
on the same runner: what moves the runner moves them too. So the fused change is judged on
log(fused) - mean(log(controls)) per commit, which cancels a runner-wide move, against that
difference's own run-to-run noise (noise_model.py); and the controls' move against *their* own
noise, so one control's noisy run neither excuses nor blames the library.

The controls explain a fused change (environment) when they moved, the same way, at least
AS_MUCH of it, clearly beyond their own noise (CONTROL_MOVE_SIGMAS), and the fused series did
not move clearly beyond them (the difference's step under CONTROL_SIGMAS standard errors).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from regressions.noise_model import robust_sigma

WINDOW = 5  # commits either side that give a level
SIGMA_WINDOW = 20  # commits before the change that give a noise
AS_MUCH = 0.5  # the controls moved "as much": on average at least this share of the fused change
CONTROL_SIGMAS = 3.0  # fused beyond the controls by this many standard errors: still the library
CONTROL_MOVE_SIGMAS = 2.0  # the controls' own move must stand this clear of their noise
MEDIAN_SE = 1.2533  # a median's standard error relative to a mean's (normal noise)


@dataclass(frozen=True)
class CovariateTest:
    fused_step: float  # log change of the fused series (medians either side)
    control_step: float  # log change of the controls' mean
    excess_z: float  # the difference's step, in the fused step's direction, in standard errors
    control_z: float  # the controls' step, in the fused step's direction, in standard errors

    @property
    def controls_explain(self) -> bool:
        if self.fused_step == 0 or not math.isfinite(self.control_step):
            return False
        return (self.control_step / self.fused_step >= AS_MUCH and self.control_z >= CONTROL_MOVE_SIGMAS
                and not self.excess_z >= CONTROL_SIGMAS)


def step_z(logs: np.ndarray, before: np.ndarray, after: np.ndarray, sign: float) -> tuple[float, float]:
    """(step, z): the change of medians from ``before`` to ``after`` (index arrays into ``logs``,
    the last WINDOW and first WINDOW used), and that step in the direction ``sign`` in standard
    errors of the noise of up to SIGMA_WINDOW commits before (robust_sigma)."""
    b, a = logs[before[-WINDOW:]], logs[after[:WINDOW]]
    if not len(b) or not len(a):
        return math.nan, math.nan
    step = float(np.median(a) - np.median(b))
    sigma = robust_sigma(logs[before[-SIGMA_WINDOW:]])
    stderr = MEDIAN_SE * sigma * math.sqrt(1 / len(b) + 1 / len(a)) if sigma > 0 else 0.0
    moved = sign * step
    z = moved / stderr if stderr > 0 else (math.inf if moved > 0 else -math.inf if moved < 0 else 0.0)
    return step, float(z)


def covariate_test(fused: np.ndarray, controls: np.ndarray, before: np.ndarray, after: np.ndarray,
                   fused_step: float) -> CovariateTest | None:
    """``fused``: log values per commit; ``controls``: (n_controls, n commits) log values, NaN
    where a control has no value; ``before``/``after``: positions before and after the change.
    Only commits where every control has a value enter. None without such commits either side."""
    controls = np.atleast_2d(np.asarray(controls, dtype=float))
    present = np.isfinite(controls).all(axis=0) & np.isfinite(fused)
    before, after = before[present[before]], after[present[after]]
    if not len(before) or not len(after) or fused_step == 0:
        return None
    mean_control = fused * np.nan  # only the commits that enter: a commit with no control would warn
    if controls.size:
        mean_control[present] = controls[:, present].mean(axis=0)
    sign = math.copysign(1.0, fused_step)
    control_step, control_z = step_z(mean_control, before, after, sign)
    _, excess_z = step_z(fused - mean_control, before, after, sign)
    return CovariateTest(fused_step, control_step, excess_z, control_z)
