"""The judgement of an A/B re-run: the base commit and the newest measured again in one session,
interleaved (A B A B ..., as ``asv continuous`` and tritonbench's side-a/side-b do), for a
finding's fused series and its controls (pure numpy/scipy; no Dash, no torch).

In one session the run-to-run noise of the history is gone: both sides run on the same runner
state, minutes apart, in alternation, so a runner that changed between the history's runs (a
driver, a clock, a blip) moves both sides alike. Per round, the fused value relative to the
controls of the same round, d = log(fused) - mean(log(controls)) (log(fused) alone without
controls); the effect is mean(d at B) - mean(d at A), judged against the spread of d *within*
the session (pooled over the two sides; Student's t):

- ``confirmed``: the effect is significant (one-sided, p < CONFIRM_P) the way the finding went,
  and not significantly smaller than the threshold;
- ``dismissed``: the effect is significantly smaller than the threshold (its upper 95 % bound
  is under it): the change did not reproduce;
- ``inconclusive``: neither (or too few rounds): the first verdict stands.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from scipy.stats import t as student_t

CONFIRMED, DISMISSED, INCONCLUSIVE = "confirmed", "dismissed", "inconclusive"
OUTCOMES = (CONFIRMED, DISMISSED, INCONCLUSIVE)
FUSED = "fused"
CONFIRM_P = 0.01  # one-sided: the re-run's effect is beyond the session's noise
BOUND_P = 0.05  # one-sided: "not significantly smaller than the threshold", and its opposite
MIN_ROUNDS = 2  # per side


@dataclass(frozen=True)
class RerunJudgement:
    outcome: str  # CONFIRMED, DISMISSED or INCONCLUSIVE
    effect: float  # relative change B / A - 1 of fused relative to the controls, in the session
    fused_effect: float  # the fused series' own change in the session
    stderr: float  # of the effect, log units
    rounds: tuple[int, int]  # rounds measured at A, at B
    controls: tuple[str, ...]  # the controls that entered

    def words(self) -> str:
        relative = "relative to its controls" if self.controls else "(no controls)"
        return (f"re-run {self.outcome}: {self.effect:+.1%} {relative} in one session "
                f"(± {self.stderr:.1%} standard error, {self.rounds[0]} A and {self.rounds[1]} B rounds; "
                f"fused alone {self.fused_effect:+.1%})")


def judge_rerun(rounds: Sequence[Mapping], sign: float, threshold: float,
                dismiss_below: float = math.inf) -> RerunJudgement:
    """``rounds``: [{"side": "A" | "B", "values": {impl: value, ...}}, ...] in the order measured
    (A the base commit, B the newest); ``sign``: +1 when the finding is an increase of the value,
    -1 a decrease; ``threshold``: the gate's smallest relative change. Rounds without a positive
    fused value are left out; a control enters only where every kept round has it.
    ``dismiss_below``: a log change the upper bound must be under too for a dismissal (half the
    step of a finding that failed at once: rerun_verdict.py)."""
    kept = [r for r in rounds if _positive(r["values"].get(FUSED))]
    controls = tuple(sorted(c for c in {k for r in kept for k in r["values"]} - {FUSED}
                            if all(_positive(r["values"].get(c)) for r in kept)))
    d = {"A": [], "B": []}
    own = {"A": [], "B": []}
    for r in kept:
        fused = math.log(r["values"][FUSED])
        mean_control = float(np.mean([math.log(r["values"][c]) for c in controls])) if controls else 0.0
        d[r["side"]].append(fused - mean_control)
        own[r["side"]].append(fused)
    n_a, n_b = len(d["A"]), len(d["B"])
    if min(n_a, n_b) < MIN_ROUNDS:
        nan = math.nan
        return RerunJudgement(INCONCLUSIVE, nan, nan, nan, (n_a, n_b), controls)
    a, b = np.array(d["A"]), np.array(d["B"])
    effect = float(b.mean() - a.mean())
    fused_effect = float(np.mean(own["B"]) - np.mean(own["A"]))
    dof = n_a + n_b - 2
    pooled = math.sqrt((float(np.var(a, ddof=1)) * (n_a - 1) + float(np.var(b, ddof=1)) * (n_b - 1)) / dof)
    stderr = pooled * math.sqrt(1 / n_a + 1 / n_b)
    needed = math.log1p(threshold)
    worse = sign * effect
    if stderr > 0:
        upper = worse + float(student_t.ppf(1 - BOUND_P, dof)) * stderr
        significant = worse / stderr >= float(student_t.ppf(1 - CONFIRM_P, dof))
    else:  # no spread at all in the session: the effect is what it is
        upper, significant = worse, worse > 0
    ruled_out = upper < min(needed, dismiss_below)
    outcome = CONFIRMED if significant and upper >= needed else DISMISSED if ruled_out else INCONCLUSIVE
    return RerunJudgement(outcome, math.expm1(effect), math.expm1(fused_effect), stderr, (n_a, n_b), controls)


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
