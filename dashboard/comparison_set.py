"""Which implementations left or joined a case's comparison set (no Dash).

A speedup is fused over the best of a set of implementations. When one of them stops running
(it fails, is skipped, or its result is gone), the best of the rest is slower and the speedup
jumps although fused did not change; when a peer starts running, it can drop. Both are said
where the speedup is shown: which implementation, and since which commit.

- dropped: not measured at this commit, but measured (ok) at an earlier commit of the run;
  ``since`` is the first commit after its last ok one. Said for as long as it lasts.
- joined: measured at this commit, not at the baseline commit (the previous one, or the one
  chosen), while fused was; ``since`` is the first commit of its current run of ok results.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dashboard import metrics

ABSENT = "absent"  # no result for the series at that commit
_STATUS_NAMES = ("ok", "skipped", "failed", ABSENT)
DROPPED, JOINED = "dropped", "joined"
COLUMNS = ["case", "mode", "impl", "pool", "kind", "status", "since"]


@dataclass(frozen=True)
class SetChange:
    case: str
    mode: str
    impl: str
    pool: str  # "unfused" or "fused peer"
    kind: str  # DROPPED or JOINED
    status: str  # its status at this commit: failed / skipped / absent, or ok when it joined
    since: str  # commit hash

    def text(self) -> str:
        if self.kind == DROPPED:
            return f"{self.impl} {self.status} since {self.since[:8]}"
        return f"{self.impl} joined at {self.since[:8]}"


def _status_at(run, position: int | None, n_series: int) -> np.ndarray:
    """Status code (0 ok, 1 skipped, 2 failed, 3 absent) of every series of the table at one commit."""
    out = np.full(n_series, 3, dtype=np.int8)
    if position is None:
        return out
    window = run.index.rows_at(position)
    out[run.table.series_of_row[window]] = run.table.status[window]
    return out


def changes(run, commit: str, base: str | None, cases=None) -> list[SetChange]:
    """The comparison-set changes of the latency series of ``run`` at ``commit`` (against
    ``base`` for joins; None: the previous commit). ``cases``: only these (case, mode) pairs."""
    positions = {h: i for i, h in enumerate(run.commits["commit_hash"])}
    p = positions.get(commit)
    if p is None:
        return []
    base = base if base in positions and positions[base] < p else run.previous_commit(commit)
    b = positions.get(base) if base else None
    series = run.series[run.series["metric"] == "latency"]
    if cases is not None:
        wanted = pd.MultiIndex.from_tuples(list(cases)) if len(cases) else pd.MultiIndex.from_tuples([("", "")])
        series = series[pd.MultiIndex.from_arrays([series["case"].astype(str), series["mode"].astype(str)]).isin(wanted)]
    if series.empty:
        return []
    n = len(run.table.series)
    now, before = _status_at(run, p, n), _status_at(run, b, n)
    ids = series.index.to_numpy()
    fused_ok_before = {(c, m) for sid, c, m, i in zip(ids, series["case"], series["mode"], series["impl"])
                       if i == metrics.FUSED and before[sid] == 0}
    others = series[series["impl"] != metrics.FUSED]
    ids = others.index.to_numpy()
    dropped = ids[now[ids] != 0]
    joined = np.array([sid for sid, c, m in zip(ids, others["case"], others["mode"])
                       if now[sid] == 0 and before[sid] != 0 and (c, m) in fused_ok_before], dtype=np.int64)
    history = _history(run, np.concatenate([dropped, joined]), p)
    out = []
    for sid in dropped:
        ok = history.get(int(sid), {})
        earlier = [q for q, s in ok.items() if s == 0 and q < p]
        if earlier:
            out.append(_change(run, others.loc[sid], DROPPED, _STATUS_NAMES[now[sid]], max(earlier) + 1))
    for sid in joined:
        statuses = history.get(int(sid), {})
        q = p
        while q - 1 >= 0 and statuses.get(q - 1) == 0:
            q -= 1
        out.append(_change(run, others.loc[sid], JOINED, "ok", q))
    return sorted(out, key=lambda c: (c.case, metrics.mode_order(c.mode), c.kind, c.impl))


def _history(run, series_ids: np.ndarray, upto: int) -> dict[int, dict[int, int]]:
    """series id -> {commit position: status} for positions <= ``upto`` (only the rows stored)."""
    if not len(series_ids):
        return {}
    rows = run.table.rows_of_series(series_ids)
    window = run.index.rows
    rows = rows[(rows >= window.start) & (rows < run.index.start[upto + 1])]
    positions = run.table.positions(run.index, rows)
    out: dict[int, dict[int, int]] = {}
    for sid, q, s in zip(run.table.series_of_row[rows].tolist(), positions.tolist(), run.table.status[rows].tolist()):
        out.setdefault(sid, {})[q] = s
    return out


def _change(run, row, kind: str, status: str, position: int) -> SetChange:
    pool = "fused peer" if metrics.is_fused_peer(row["impl"]) else "unfused"
    return SetChange(str(row["case"]), str(row["mode"]), str(row["impl"]), pool, kind, status,
                     str(run.commits["commit_hash"].iloc[position]))


def frame(found: list[SetChange]) -> pd.DataFrame:
    return pd.DataFrame([c.__dict__ for c in found], columns=COLUMNS)
