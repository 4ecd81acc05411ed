"""The gate's final verdict: its first verdict with what the A/B re-run said (pure; no Dash, no torch).

``python -m benchmarks.rerun`` writes the re-run's measurements (rerun_candidates.py chose the
findings); this judges each (rerun_judgement.py) and moves its gate item:

- ``confirmed``: a regression (fails the gate), whatever the first verdict's category was;
- ``dismissed``: noise (fails nothing): it did not reproduce at the base and the newest commit
  measured in one session;
  A finding that was clear at its first verdict (it failed) is dismissed only when the re-run
  positively shows no step of that size: the upper bound of its change is under half the
  finding's step (and under the threshold); otherwise it is inconclusive. A dismissed change is
  "earlier" at the next push (clear before the judged commits: the gate judges a change once,
  at the push that made it clear), so a wrong dismissal would bury it for good;
- ``inconclusive``, or a re-run that could not measure: the first verdict stands.

A series the re-run's screen picked (``verdict.screened``, rerun_screen.py) has no gate item:
confirmed, it becomes a regression item (fails); dismissed or inconclusive, a noise item that
says so (fails nothing: the screen alone never fails the gate).

Every re-run item keeps its judgement (``GateItem.rerun``), so the report says which findings
were re-run and what the re-run said. Accepted items and ones of earlier commits are never
candidates, so they do not move; ``accepted_elsewhere`` is untouched.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping

from regressions.classify import NOISE
from regressions.findings import Finding
from regressions.gate import REGRESSION_ITEM, GateItem, GateVerdict
from regressions.rerun_judgement import CONFIRMED, DISMISSED, RerunJudgement, judge_rerun

RERUN_VERSION = 1
SIDES = ("A", "B")


class RerunFileError(ValueError):
    """The re-run's file is not what benchmarks.rerun writes; the message names the problem."""


@dataclass(frozen=True)
class Rerun:
    benchmark: str
    params: str
    machine: str
    commit_hash: str  # the finding's commit (which names it)
    base_commit: str  # A
    newest_commit: str  # B
    rounds: tuple  # ({"side": "A" | "B", "values": {impl: value}}, ...)
    problem: str  # why it could not measure ("" when it did)


def parse_reruns(doc: object) -> list[Rerun]:
    """The re-runs in benchmarks.rerun's JSON; RerunFileError naming the first problem."""
    if not isinstance(doc, dict) or doc.get("version") != RERUN_VERSION or not isinstance(doc.get("reruns"), list):
        raise RerunFileError(f"expected benchmarks.rerun's JSON: an object with \"version\": {RERUN_VERSION} and a "
                             "\"reruns\" list")
    out = []
    for i, entry in enumerate(doc["reruns"]):
        where = f"reruns[{i}]"
        if not isinstance(entry, dict):
            raise RerunFileError(f"{where} is {type(entry).__name__}, expected an object")
        for key in ("benchmark", "params", "machine", "commit_hash", "base_commit", "newest_commit", "problem"):
            if not isinstance(entry.get(key), str):
                raise RerunFileError(f"{where}.{key} is {entry.get(key)!r}, expected a string")
        rounds = entry.get("rounds")
        if not isinstance(rounds, list):
            raise RerunFileError(f"{where}.rounds is {rounds!r}, expected a list")
        for j, r in enumerate(rounds):
            values = r.get("values") if isinstance(r, dict) else None
            if not isinstance(r, dict) or r.get("side") not in SIDES or not isinstance(values, dict):
                raise RerunFileError(f"{where}.rounds[{j}]: expected {{\"side\": \"A\" or \"B\", \"values\": {{...}}}}")
            for impl, v in values.items():
                if not (v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))):
                    raise RerunFileError(f"{where}.rounds[{j}].values.{impl} is {v!r}, expected a number or null")
        out.append(Rerun(entry["benchmark"], entry["params"], entry["machine"], entry["commit_hash"],
                         entry["base_commit"], entry["newest_commit"], tuple(rounds), entry["problem"]))
    return out


def with_reruns(verdict: GateVerdict, reruns: list[Rerun], threshold: float) -> GateVerdict:
    """The final verdict (see the module docstring). A re-run that matches no gate item (the
    results changed since the candidates were chosen) moves nothing."""
    by_key = {(r.benchmark, r.params, r.machine, r.commit_hash): r for r in reruns}
    items = []
    for item in verdict.items:
        c = item.change
        rerun = by_key.get((c.benchmark, c.params, c.machine, c.commit_hash)) if isinstance(c, Finding) else None
        if rerun is not None and item.acceptance is None:
            item = _moved(item, rerun, threshold)
        items.append(item)
    for finding, z in verdict.screened:
        rerun = by_key.get((finding.benchmark, finding.params, finding.machine, finding.commit_hash))
        if rerun is not None:
            note = (f"picked by the re-run's screen ({finding.score:.1f} history sigmas above its level, {z:.1f} relative "
                    "to its controls; below the detector's bar)")
            items.append(_moved(GateItem(NOISE, finding, note), rerun, threshold, screened=True))
    return replace(verdict, items=items)


def _moved(item, rerun: Rerun, threshold: float, screened: bool = False):
    if rerun.problem:
        return replace(item, rerun=rerun.problem, note=f"{item.note}; re-run could not measure: {rerun.problem}")
    sign = math.copysign(1.0, item.change.relative_change)
    # a finding that failed at once is dismissed only where the re-run rules out half its step
    half_step = abs(math.log1p(item.change.relative_change)) / 2 if item.category == REGRESSION_ITEM else math.inf
    judgement: RerunJudgement = judge_rerun(_numbers(rerun.rounds), sign, threshold, dismiss_below=half_step)
    note = f"{item.note}; {judgement.words()}"
    if judgement.outcome == CONFIRMED:
        return replace(item, rerun=judgement, category=REGRESSION_ITEM, note=note)
    if judgement.outcome == DISMISSED:
        return replace(item, rerun=judgement, category=NOISE, note=note + " (did not reproduce: not failed)")
    if screened:
        return replace(item, rerun=judgement, note=note + " (not failed: the screen alone fails nothing)")
    return replace(item, rerun=judgement, note=note + " (the first verdict stands)")


def _numbers(rounds) -> list[dict]:
    return [{"side": r["side"], "values": {k: v for k, v in r["values"].items() if v is not None}} for r in rounds]
