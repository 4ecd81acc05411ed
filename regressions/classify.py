"""What moved: the library, the machine it ran on, or only the noise (pure; no Dash, no torch).

The suite's eager and torch.compile lines are the harness's own code, fixed across the history:
they move when torch, the driver or the machine does, not when fused_mlp does. So a finding in
a fused series is read beside the same case's controls at the same commits:

- ``library``: the fused series moved and its controls did not move as much (or there are no
  controls to ask: a series of another suite is judged as before);
- ``environment``: the controls moved too, beyond their own noise, and the fused series did not
  move clearly beyond them (covariate.py: log fused minus the controls' mean, judged against
  that difference's own noise); the evidence names what the run's recorded state changed
  between the two commits (driver 570 -> 575, clocks, throttling, a version);
- ``noise``: the series' spread grew, not its level, or a bimodal runner's newest run(s) landed
  on the second level its history shows (noise_model.py).

A finding in a control or peer series itself (impl other than fused) is ``environment``: that
code does not change with the library.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from asv_results.data import STATUS_OK
from regressions.covariate import AS_MUCH, SIGMA_WINDOW, WINDOW, covariate_test
from regressions.formatting import format_change
from regressions.noise_model import MIN_MODE_RUNS, robust_sigma, series_noise

LIBRARY, ENVIRONMENT, NOISE = "library", "environment", "noise"
CLASSES = (LIBRARY, ENVIRONMENT, NOISE)
FUSED = "fused"
CONTROLS = ("eager", "compile")
SPREAD_WINDOW = 10  # commits either side that give a spread
SPREAD_GROWTH = 2.0  # noise: the spread after is at least this many times the spread before
NOISE_SIGMAS = 2.0  # ... and the change is within this many of the spread after
_IMPL = re.compile(r"(?:^|,\s*)impl=(['\"])(?P<impl>[^'\"]*)\1")


@dataclass(frozen=True)
class ControlMove:
    impl: str
    relative_change: float  # after / before - 1 of the control's median level
    sigma: float  # its commit-to-commit noise (log units; NaN when too few commits)
    moved: bool  # as much as the fused change, the same way, beyond its noise


@dataclass(frozen=True)
class Classification:
    kind: str  # LIBRARY, ENVIRONMENT or NOISE
    evidence: str  # in words, for the gate's report and the Regressions page
    controls: tuple[ControlMove, ...] = ()
    state_changes: tuple[str, ...] = ()  # "driver 570.1 -> 575.2", from the runs' recorded state

    def label(self) -> str:
        return f"{self.kind}: {self.evidence}"


def impl_of(params: str) -> str | None:
    """The implementation in an asv params key ("case='...', impl='fused'"), or None."""
    m = _IMPL.search(params or "")
    return m.group("impl") if m else None


def with_impl(params: str, impl: str) -> str:
    """The same params key with another implementation."""
    return _IMPL.sub(lambda m: m.group(0).replace(f"{m.group(1)}{m.group('impl')}{m.group(1)}",
                                                  f"'{impl}'"), params, count=1)


def state_changes(before: Mapping[str, object] | None, after: Mapping[str, object] | None) -> list[str]:
    """What the recorded run state changed between two commits: ["driver 570 -> 575", ...]."""
    if not before or not after:
        return []
    out = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        if a != b and a is not None and b is not None:
            out.append(f"{key} {a} -> {b}")
        elif a != b:
            out.append(f"{key} {'recorded' if b is not None else 'no longer recorded'}"
                       + (f" ({b})" if b is not None else ""))
    return out


def classify(finding, frame: pd.DataFrame, states: Mapping[str, Mapping[str, object]] | None = None
             ) -> Classification:
    """The class of one Finding (regressions.findings) over the results frame it came
    from. ``states``: {(machine, commit): the run's recorded state} (recorded_state.py), for the evidence."""
    states = states or {}
    changed = tuple(state_changes(states.get((finding.machine, finding.previous_commit)),
                                  states.get((finding.machine, finding.commit_hash))))
    said = f"; the run's state changed: {', '.join(changed)}" if changed else ""
    said += _own_pass_throttled(finding, states)
    impl = impl_of(finding.params)
    if impl is None:
        return Classification(LIBRARY, "no eager/compile controls in this series' parameters" + said,
                              state_changes=changed)
    if impl != FUSED:
        return Classification(ENVIRONMENT, f"a control or peer series (impl={impl}): it does not change with "
                                           "the library" + said, state_changes=changed)
    rows = _series_rows(frame, finding)
    split = _split_dates(frame, finding)
    step = _log_ratio(finding.before, finding.after)
    fused = rows.get(finding.params)
    controls = {c: rows[with_impl(finding.params, c)] for c in CONTROLS if with_impl(finding.params, c) in rows}
    moves = tuple(m for m in (_control_move(r, c, split, step) for c, r in controls.items()) if m is not None)
    why = LIBRARY
    if fused is not None:
        dates = fused["date"]
        before = np.flatnonzero((dates < split[0]).to_numpy())
        after = np.flatnonzero((dates >= split[1]).to_numpy())
        why = series_class(np.log(fused["value"].to_numpy(dtype=float)),
                           _aligned(fused, [controls[m.impl] for m in moves]), before, after, step)
    if why == SPREAD:
        return Classification(NOISE, f"the spread grew after {finding.commit_hash[:8]}, not the level ("
                                     f"{format_change(finding.relative_change)} within {NOISE_SIGMAS:g}x the spread after)"
                                     + said, state_changes=changed)
    if why == SECOND_LEVEL:
        return Classification(NOISE, f"a bimodal runner: the history shows a second level "
                                     f"{format_change(finding.relative_change)} away, and the newest run(s) lie on it"
                                     + said, state_changes=changed)
    if not moves:
        return Classification(LIBRARY, "no control measured either side of the change" + said,
                              state_changes=changed)
    listed = ", ".join(f"{m.impl} {format_change(m.relative_change)}" for m in moves)
    if why == ENVIRONMENT:
        return Classification(ENVIRONMENT, f"the controls moved too ({listed}; fused {format_change(finding.relative_change)})"
                                           + said, moves, changed)
    return Classification(LIBRARY, f"the controls did not move as much ({listed}; fused "
                                   f"{format_change(finding.relative_change)})" + said, moves, changed)


SPREAD, SECOND_LEVEL = "spread", "second level"  # the two ways a change is noise


def series_class(fused: np.ndarray, controls: np.ndarray, before: np.ndarray, after: np.ndarray,
                 step: float) -> str:
    """Why a fused change is what it is, on arrays: SPREAD or SECOND_LEVEL (noise), ENVIRONMENT
    (the covariate test: the controls explain it) or LIBRARY. ``fused``: log values per commit;
    ``controls``: (n_controls, n) log values aligned with it, NaN where missing; ``before`` /
    ``after``: positions before the change may have come and after it surely came; ``step``:
    the finding's log change. The gate (classify) and tools/measure_classification.py use it."""
    if _spread_grew(fused[before[-SPREAD_WINDOW:]], fused[after[:SPREAD_WINDOW]], step):
        return SPREAD
    if _second_level(fused[before[-SIGMA_WINDOW:]], fused[after]):
        return SECOND_LEVEL
    test = covariate_test(fused, controls, before, after, step) if len(controls) else None
    return ENVIRONMENT if test is not None and test.controls_explain else LIBRARY


def _aligned(fused: pd.DataFrame, controls: list[pd.DataFrame]) -> np.ndarray:
    """The controls' log values at the fused series' commits, (n_controls, n), NaN where missing."""
    commits = fused["commit_hash"].astype(str).tolist()
    by_commit = [dict(zip(r["commit_hash"].astype(str), np.log(r["value"].to_numpy(dtype=float)))) for r in controls]
    return np.array([[d.get(c, np.nan) for c in commits] for d in by_commit]).reshape(len(controls), len(commits))


def _own_pass_throttled(finding, states: Mapping) -> str:
    """Evidence: this series' own measuring pass was throttled, at the commit or the one before
    (states keyed (machine, commit, benchmark, params_key): recorded_states(per_benchmark=True))."""
    at = [f"{commit[:8]} ({state['throttled']})" for commit in (finding.previous_commit, finding.commit_hash)
          if commit and (state := states.get((finding.machine, commit, finding.benchmark, finding.params)))
          and state.get("throttled") not in (None, "none", "unknown")]
    return f"; this benchmark's own pass was throttled at {', '.join(at)}" if at else ""


def classified_verdict(verdict, frame: pd.DataFrame, states=None, *, fail_on: str = LIBRARY):
    """The gate's verdict with each regression, suspected change and still-open earlier one classified; with
    ``fail_on="library"`` (the default) one that is not the library's moves to the category of
    its class (environment, noise), which does not fail the gate; ``"all"`` keeps today's gate."""
    from regressions.findings import Finding
    from regressions.gate import EARLIER, REGRESSION_ITEM, SUSPECTED  # gate imports nothing from here

    if fail_on not in (LIBRARY, "all"):
        raise ValueError(f"fail_on={fail_on!r}: expected 'library' or 'all'")
    judged = (REGRESSION_ITEM, SUSPECTED)
    if callable(states):  # read only when something is to be classified
        wanted = any(i.category in (*judged, EARLIER) and isinstance(i.change, Finding) for i in verdict.items)
        states = states() if wanted else {}
    items = []
    for item in verdict.items:
        if item.category in judged and isinstance(item.change, Finding):  # not a failure
            c = classify(item.change, frame, states)
            moved = fail_on == LIBRARY and c.kind != LIBRARY
            item = replace(item, classification=c, category=c.kind if moved else item.category,
                           note=f"{item.note} (was {item.category}: not the library)" if moved else item.note)
        elif item.category == EARLIER and isinstance(item.change, Finding):
            # still open from before: classified too, so every page shows the gate's class (it fails nothing)
            item = replace(item, classification=classify(item.change, frame, states))
        items.append(item)
    return replace(verdict, items=items)


# --- the series around a change -----------------------------------------------------------

def _series_rows(frame: pd.DataFrame, finding) -> dict[str, pd.DataFrame]:
    """The fused series and its controls (same machine, env, benchmark), ok values only."""
    keys = {finding.params, *(with_impl(finding.params, c) for c in CONTROLS)}
    f = frame[(frame["machine"].astype(str) == finding.machine) & (frame["env_name"].astype(str) == finding.env_name)
              & (frame["benchmark"].astype(str) == finding.benchmark) & frame["params_key"].astype(str).isin(keys)
              & (frame["status"] == STATUS_OK)]
    f = f[np.isfinite(f["value"].to_numpy(dtype=float)) & (f["value"].to_numpy(dtype=float) > 0)]
    return {str(k): g.sort_values("date") for k, g in f.groupby(f["params_key"].astype(str))}


def _split_dates(frame: pd.DataFrame, finding):
    """(last date before the change may have come, first date after it surely came)."""
    dates = frame.groupby(frame["commit_hash"].astype(str))["date"].min()
    earliest = finding.earliest_commit or finding.commit_hash
    latest = finding.latest_commit or finding.commit_hash
    return dates.get(earliest, finding.commit_date), dates.get(latest, finding.commit_date)


def _sides(rows: pd.DataFrame, split, window: int = WINDOW) -> tuple[np.ndarray, np.ndarray]:
    before_end, after_start = split
    logs = np.log(rows["value"].to_numpy(dtype=float))
    dates = rows["date"]
    before = logs[(dates < before_end).to_numpy()][-window:]
    after = logs[(dates >= after_start).to_numpy()][:window]
    return before, after


def _control_move(rows: pd.DataFrame, impl: str, split, step: float) -> ControlMove | None:
    """How far a control moved across the fused change (medians of WINDOW commits either side)."""
    before, after = _sides(rows, split)
    if not len(before) or not len(after):
        return None
    moved_by = float(np.median(after) - np.median(before))
    sigma = robust_sigma(_sides(rows, split, SIGMA_WINDOW)[0])
    return ControlMove(impl, math.expm1(moved_by), sigma, bool(step != 0 and moved_by / step >= AS_MUCH))


def _second_level(before: np.ndarray, after: np.ndarray) -> bool:
    """A bimodal runner (noise_model.py): the history before shows a second level and the newest
    commits (fewer than MIN_MODE_RUNS after the change: a longer stretch there is a level) lie on it."""
    if not 0 < len(after) < MIN_MODE_RUNS or len(before) < WINDOW:
        return False
    noise = series_noise(before)
    level = float(np.median(before))
    return all(noise.explains(float(v) - level) for v in after)


def _spread_grew(before: np.ndarray, after: np.ndarray, step: float) -> bool:
    """The standard deviation (log values; it sees a runner turned bimodal, a MAD of a few
    commits may not) of up to SPREAD_WINDOW commits after the change is SPREAD_GROWTH times the
    one before, and the change lies within NOISE_SIGMAS of it."""
    if len(before) < 3 or len(after) < 3:
        return False
    spread_before, spread_after = float(np.std(before, ddof=1)), float(np.std(after, ddof=1))
    return spread_after >= SPREAD_GROWTH * max(spread_before, 1e-12) and abs(step) <= NOISE_SIGMAS * spread_after


def _log_ratio(before: float, after: float) -> float:
    return math.log(after / before) if before > 0 and after > 0 else 0.0
