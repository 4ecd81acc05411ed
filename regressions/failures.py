"""A benchmark that starts failing (asv stores null) or stops failing: a finding of its own.

The level detector sees only measured values, so a benchmark whose value turns into null simply
drops out of its series; here every change of a series into or out of "failed" is named, as
``asv compare`` marks "introduced a failure" / "fixed a failure".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from asv_results.commit_order import ORDER
from asv_results.data import STATUS_FAILED
from regressions.findings import IMPROVEMENT, REGRESSION

SERIES = ["machine", "env_name", "benchmark", "params_key"]


@dataclass(frozen=True)
class StatusChange:
    """A series that started or stopped failing at one commit."""

    benchmark: str
    params: str
    machine: str
    env_name: str
    unit: str | None
    commit_hash: str  # first commit with the new status
    previous_commit: str  # the commit measured just before ("" for a series that failed from its first result)
    commit_date: pd.Timestamp
    before: str  # status at previous_commit: "ok", "skipped", "failed", or "" (no earlier result)
    after: str
    direction: str  # "regression" (started failing) or "improvement" (stopped failing)
    commits_in_state: int  # commits measured in the new status since, this one included
    present_at_newest: bool  # still in that status at the series' newest commit
    series_last_commit: str

    kind = "status"

    def status(self) -> str:
        since = f"{self.commits_in_state} commit{'s' if self.commits_in_state != 1 else ''}"
        if self.direction == REGRESSION:
            state = f"failing for {since}" if self.present_at_newest else f"failed for {since}, not now"
        else:
            state = "still fixed" if self.present_at_newest else "failing again now"
        return state

    def summary(self) -> str:
        if self.direction == REGRESSION:
            was = f"was {self.before}" if self.before else "no earlier result"
            return f"started failing ({was})"
        return f"stopped failing (now {self.after})"


def find_status_changes(frame: pd.DataFrame) -> list[StatusChange]:
    """Every change into or out of "failed", in every series of a load_results frame, newest first."""
    if frame.empty:
        return []
    when = ORDER if ORDER in frame.columns else "date"  # asv_results.commit_order's order where the frame has it
    rows = frame[[*SERIES, "commit_hash", "date", "status", "unit", *([ORDER] if when == ORDER else [])]].copy()
    for column in (*SERIES, "commit_hash", "status"):
        rows[column] = rows[column].astype(str)
    rows = rows.sort_values([*SERIES, when, "commit_hash"], kind="mergesort").reset_index(drop=True)
    failed = (rows["status"] == STATUS_FAILED).to_numpy()
    first = np.zeros(len(rows), dtype=bool)  # the first row of each series (rows are sorted by series)
    first[0] = True
    for column in SERIES:
        labels = rows[column].to_numpy()
        first[1:] |= labels[1:] != labels[:-1]
    changed = np.r_[False, failed[1:] != failed[:-1]] & ~first
    starts = np.flatnonzero(changed | (first & failed))
    if not len(starts):
        return []
    first_rows = np.flatnonzero(first)
    last_rows = np.r_[first_rows[1:] - 1, len(rows) - 1]
    out = []
    for i in starts:
        end = int(last_rows[np.searchsorted(first_rows, i, side="right") - 1])  # the series' newest row
        same = failed[i:end + 1] == failed[i]
        run = len(same) if same.all() else int(np.argmin(same))
        row = rows.iloc[i]
        previous = rows.iloc[i - 1] if not first[i] else None
        unit = row["unit"]
        out.append(StatusChange(
            benchmark=row["benchmark"], params=row["params_key"], machine=row["machine"], env_name=row["env_name"],
            unit=unit if isinstance(unit, str) else None, commit_hash=row["commit_hash"],
            previous_commit=previous["commit_hash"] if previous is not None else "",
            commit_date=pd.Timestamp(row["date"]), before=previous["status"] if previous is not None else "",
            after=row["status"], direction=REGRESSION if failed[i] else IMPROVEMENT, commits_in_state=run,
            present_at_newest=bool(same.all()), series_last_commit=rows["commit_hash"].iat[end]))
    out.sort(key=lambda c: (c.commit_date, c.commit_hash, c.benchmark, c.params), reverse=True)
    return out
