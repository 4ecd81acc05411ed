"""Which of the gate's findings to measure again in an A/B re-run (pure; no Dash, no torch).

A candidate is a level change in a series measured at the judged commits (its newest commit is
one of them) that its first commits decide: not yet confirmed (fewer than min_after commits at
the new level), in a category the first verdict gave on that thin evidence: a regression
(fails), suspected (fails only with --strict), or one the classification moved to environment
or noise. Only series that change with the library
(impl fused, or a series without controls) are re-run. At most AT_MOST per machine per push, the failing
ones first, then the suspected, then the excused; larger changes first within each; then,
within the same cap, the series the re-run's screen picked (rerun_screen.py: below the
detector's bar, but above the history's noise), largest z first.

The re-run compares the commit before the change's first plausible commit (A) with the series'
newest (B): a change the detector placed a commit late (noise) still lies between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from regressions.classify import ENVIRONMENT, FUSED, NOISE, impl_of
from regressions.gate import REGRESSION_ITEM, SUSPECTED
from regressions.rerun_screen import SCREENED

AT_MOST = 5  # findings re-run per machine per push (benchmarks.rerun applies it per machine)
SECONDS_EACH = 60  # GPU seconds per finding, at most
ORDER = (REGRESSION_ITEM, SUSPECTED, ENVIRONMENT, NOISE)  # what is re-run first


@dataclass(frozen=True)
class Candidate:
    benchmark: str
    params: str
    machine: str
    env_name: str
    base_commit: str  # A: the last commit surely before the change (before its first plausible commit)
    commit_hash: str  # the finding's commit, which names it
    newest_commit: str  # B: the series' newest commit, surely after it
    category: str  # the first verdict's category
    relative_change: float


def is_candidate(category: str, confirmed: bool, params: str, judged: bool) -> bool:
    """The rule above, for one gate item (``judged``: its series' newest commit is a judged commit)."""
    return category in ORDER and judged and not confirmed and impl_of(params) in (None, FUSED)


def candidates(gate_doc: Mapping, at_most: int = AT_MOST) -> list[Candidate]:
    """The candidates in the gate's JSON report (--format json), in the order to re-run them.
    KeyError/TypeError/ValueError on a document of another shape (the caller names it)."""
    gate = gate_doc["gate"]
    judged = {(r["machine"], r["env_name"]): set(r["commits"]) for r in gate["judged"]}
    found = []
    for item in gate["items"]:
        c = item["change"]
        if "before" not in c:  # a benchmark that started failing: nothing to re-measure
            continue
        at_judged = c["series_last_commit"] in judged.get((c["machine"], c["env_name"]), ())
        if is_candidate(item["category"], bool(c["confirmed"]), c["params"], at_judged):
            found.append(Candidate(c["benchmark"], c["params"], c["machine"], c["env_name"],
                                   c.get("before_earliest") or c["previous_commit"], c["commit_hash"],
                                   c["series_last_commit"], item["category"], float(c["relative_change"])))
    found.sort(key=lambda c: (ORDER.index(c.category), -abs(c.relative_change)))
    # then what the re-run's screen picked (rerun_screen.py), largest z first, within the same cap
    for s in sorted(gate.get("screened", []), key=lambda s: -float(s["z"])):
        c = s["change"]
        found.append(Candidate(c["benchmark"], c["params"], c["machine"], c["env_name"], c["before_earliest"],
                               c["commit_hash"], c["series_last_commit"], SCREENED, float(c["relative_change"])))
    return found[:at_most]
