"""The per-commit gate: what the judged commits introduced, and nothing older.

The judged commits are the newest commit of each run (machine, environment), or with ``base``
every commit after it (``--base A`` / ``A..B``, what a CI job or a pull request compares). Each
regression still present at the newest commit, and each benchmark still failing, falls in one
category:

- ``regression`` (fails the gate): a clear change at a judged commit (confirmed, or clear from
  its first commits, see newest.py); a benchmark that started failing at a judged commit; or an
  older change that the judged commits made clear (the history up to the base did not show it
  clearly, the history now does): it fails once, at the commit where it became clear.
- ``suspected`` (fails only with ``strict``): a change at the judged commits, or an older one,
  too small to tell from the commits so far; later commits confirm or drop it.
- ``accepted``: a regression or a suspected change above that results/accepted.json accepts.
- ``earlier``: clear before the judged commits: already judged when it came, so it does not fail
  this commit. It is listed as still open unless accepted (then it carries its acceptance); the
  dashboard keeps it open until accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import pandas as pd

from asv_results.data import commit_order
from regressions.acceptance import Acceptance, find_acceptance, plausible_commits
from regressions.failures import SERIES, StatusChange
from regressions.findings import REGRESSION, Finding, find_changes
from regressions.statistics import DetectorSettings

REGRESSION_ITEM, SUSPECTED, ACCEPTED, EARLIER = "regression", "suspected", "accepted", "earlier"
SAME_CHANGE = 2  # commits either side within which a finding as of the base is the same change


@dataclass(frozen=True)
class JudgedRun:
    machine: str
    env_name: str
    base_commit: str  # the newest commit not judged ("" when every commit is judged)
    commits: tuple[str, ...]  # the judged commits, oldest first


@dataclass(frozen=True)
class GateItem:
    category: str  # REGRESSION_ITEM, SUSPECTED, ACCEPTED or EARLIER
    change: Finding | StatusChange
    note: str  # why it is in that category, in words
    acceptance: Acceptance | None = None
    # library / environment / noise, with its evidence (classify.py); None: not classified
    classification: object | None = None
    # what the A/B re-run said (rerun_verdict.py): a RerunJudgement, or why it could not measure; None: not re-run
    rerun: object | None = None


@dataclass
class GateVerdict:
    runs: list[JudgedRun]
    items: list[GateItem] = field(default_factory=list)
    strict: bool = False
    # (regression, the entry accepting it) for the ones not judged (gone by the newest commit, or
    # in a run with nothing new): what the pages show as accepted besides the items
    accepted_elsewhere: list[tuple[Finding | StatusChange, Acceptance]] = field(default_factory=list)
    # (finding, z): series the A/B re-run's screen picked beside the items (rerun_screen.py); fail nothing
    screened: list[tuple[Finding, float]] = field(default_factory=list)

    def of(self, category: str) -> list[GateItem]:
        return [i for i in self.items if i.category == category]

    @property
    def failing(self) -> list[GateItem]:
        return [i for i in self.items if i.category == REGRESSION_ITEM or (self.strict and i.category == SUSPECTED)]

    @property
    def failed(self) -> bool:
        return bool(self.failing)


def judged_runs(frame: pd.DataFrame, base_commit: str | None = None, order: pd.DataFrame | None = None
                ) -> list[JudgedRun]:
    """Per run, the commits to judge: the newest one, or every one after ``base_commit`` (a full
    hash present in ``frame``) in the run's commit order (data.commit_order: the repository's
    where the frame has asv_results.commit_order's column; a run without the base commit: the ones
    dated after it). ``order``: commit_order(frame), when the caller has it."""
    order = commit_order(frame) if order is None else order
    base_date = None
    if base_commit is not None:
        base_date = frame.loc[frame["commit_hash"].astype(str) == base_commit, "date"].min()
    runs = []
    for (machine, env), commits in order.groupby(["machine", "env_name"], observed=True, sort=True):
        hashes = commits["commit_hash"].astype(str).tolist()
        if base_date is None:
            first = len(hashes) - 1
        elif base_commit in hashes:
            first = hashes.index(base_commit) + 1
        else:
            first = int((commits["date"] <= base_date).sum())
        runs.append(JudgedRun(str(machine), str(env), hashes[first - 1] if first > 0 else "", tuple(hashes[first:])))
    return sorted(runs, key=lambda r: (r.machine, r.env_name))  # by name, whatever order the loader met them in


def judge(frame: pd.DataFrame, findings: Sequence[Finding], status_changes: Sequence[StatusChange],
          settings: DetectorSettings = DetectorSettings(), *, base_commit: str | None = None,
          accepted: Sequence[Acceptance] = (), strict: bool = False,
          benchmarks_meta=None, samples_of=None) -> GateVerdict:
    """The gate's verdict on the judged commits (see the module docstring). ``samples_of``: as
    find_changes takes it, for a frame without a samples column."""
    order = commit_order(frame)
    runs = judged_runs(frame, base_commit, order)
    verdict = GateVerdict(runs, strict=strict)
    by_run = {(r.machine, r.env_name): r for r in runs if r.commits}  # a run with nothing new is not judged
    orders = {(str(m), str(e)): c["commit_hash"].astype(str).tolist()
              for (m, e), c in order.groupby(["machine", "env_name"], observed=True)}
    older: list[Finding] = []
    for f, run in _open_in_judged_runs(findings, by_run):
        if f.commit_hash in run.commits:
            note = "at the judged commits" if f.clear else "at the judged commits, too small to tell yet"
            verdict.items.append(GateItem(REGRESSION_ITEM if f.clear else SUSPECTED, f, note))
        else:
            older.append(f)
    verdict.items += _judge_older(frame, older, by_run, orders, settings, benchmarks_meta, samples_of)
    for c, run in _open_in_judged_runs(status_changes, by_run):
        if c.commit_hash in run.commits:
            verdict.items.append(GateItem(REGRESSION_ITEM, c, "started failing at the judged commits"))
        else:
            verdict.items.append(GateItem(EARLIER, c, "failing since before the judged commits"))
    verdict.items = [_accept(item, accepted, orders) for item in verdict.items]
    judged = {id(i.change) for i in verdict.items}
    for c in [*findings, *status_changes]:
        if c.direction == REGRESSION and id(c) not in judged and (entry := _acceptance(c, accepted, orders)):
            verdict.accepted_elsewhere.append((c, entry))
    return verdict


def _open_in_judged_runs(changes, by_run):
    """(change, its run) for each regression still present whose run has commits to judge."""
    for c in changes:
        if c.direction == REGRESSION and c.present_at_newest:
            run = by_run.get((c.machine, c.env_name))
            if run is not None:
                yield c, run


def _judge_older(frame, older: list[Finding], by_run, orders, settings, benchmarks_meta, samples_of) -> list[GateItem]:
    """Regressions from before the judged commits: did the judged commits make them clear?
    Each is looked for again in its series as it stood at the base."""
    if not older:
        return []
    wanted = {(f.machine, f.env_name, f.benchmark, f.params) for f in older}
    keys = frame[SERIES].astype(str)
    mask = pd.Series(list(zip(*(keys[c] for c in SERIES))), index=frame.index).isin(wanted)
    subset = frame[mask]
    items = []
    for f in older:
        run = by_run[(f.machine, f.env_name)]
        order = orders[(f.machine, f.env_name)]
        base_position = len(order) - len(run.commits)  # the judged commits are the tail of the order
        rows = subset[(subset["machine"].astype(str) == f.machine) & (subset["env_name"].astype(str) == f.env_name)
                      & (subset["benchmark"].astype(str) == f.benchmark)
                      & (subset["params_key"].astype(str) == f.params)
                      & subset["commit_hash"].astype(str).isin(order[:base_position])]
        then = find_changes(rows, settings, benchmarks_meta=benchmarks_meta, samples_of=samples_of) if len(rows) else []
        same = [p for p in then if p.direction == REGRESSION and _overlap(p, f, order)]
        if any(p.clear for p in same):
            items.append(GateItem(EARLIER, f, "clear before the judged commits"))
        elif f.clear:
            age = base_position - order.index(f.commit_hash)
            items.append(GateItem(REGRESSION_ITEM, f, f"made clear by the judged commits ({age} commit"
                                                      f"{'s' if age != 1 else ''} before them)"))
        else:
            items.append(GateItem(SUSPECTED, f, "from before the judged commits, not clear yet"))
    return items


def _overlap(then: Finding, now: Finding, order: list[str]) -> bool:
    """Whether a finding as of the base and one now are the same change: their plausible
    positions, widened by SAME_CHANGE commits, overlap."""
    def span(f):
        positions = [order.index(c) for c in plausible_commits(f, order) if c in order]
        return min(positions) - SAME_CHANGE, max(positions) + SAME_CHANGE

    (a, b), (c, d) = span(then), span(now)
    return a <= d and c <= b


def _acceptance(change, accepted: Sequence[Acceptance], orders) -> Acceptance | None:
    """The accepted.json entry covering one of the change's plausible commits, or None."""
    order = orders.get((change.machine, change.env_name), [])
    return find_acceptance(accepted, change.benchmark, change.params, change.machine,
                           plausible_commits(change, order))


def _accept(item: GateItem, accepted: Sequence[Acceptance], orders) -> GateItem:
    change = item.change
    entry = _acceptance(change, accepted, orders)
    if entry is None:
        return item
    return GateItem(EARLIER if item.category == EARLIER else ACCEPTED, change, f"{item.note}; {entry.label()}",
                    entry)
