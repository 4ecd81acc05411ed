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

from dashboard.data import metrics

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
    positions = run._position_of
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
    keys = series["case"].astype(str).to_numpy().astype(object) + "\x00" + series["mode"].astype(str).to_numpy()
    fused = (series["impl"].astype(str) == metrics.FUSED).to_numpy()
    fused_ok_before = pd.Index(keys).isin(keys[fused & (before[ids] == 0)])  # hashed: strings
    others = series[~fused]
    ids, fused_ok_before = ids[~fused], fused_ok_before[~fused]
    dropped = ids[now[ids] != 0]
    joined = ids[(now[ids] == 0) & (before[ids] != 0) & fused_ok_before]
    last_ok = _last_ok_before(run, dropped, p)
    out = []
    for sid, q in zip(dropped, last_ok):
        if q >= 0:
            out.append(_change(run, others.loc[sid], DROPPED, _STATUS_NAMES[now[sid]], q + 1))
    history = _history(run, joined, p)
    for sid in joined:
        statuses = history.get(int(sid), {})
        q = p
        while q - 1 >= 0 and statuses.get(q - 1) == 0:
            q -= 1
        out.append(_change(run, others.loc[sid], JOINED, "ok", q))
    return sorted(out, key=lambda c: (c.case, metrics.mode_order(c.mode), c.kind, c.impl))


def _rows_upto(run, series_ids: np.ndarray, upto: int) -> np.ndarray:
    """The stored rows of these series of ``run`` at commit positions <= ``upto``."""
    rows = run.table.rows_of_series(series_ids)
    return rows[(rows >= run.index.rows.start) & (rows < run.index.start[upto + 1])]


def _last_ok_before(run, series_ids: np.ndarray, p: int) -> np.ndarray:
    """Per series, the last commit position before ``p`` where it was ok (-1: never)."""
    out = np.full(len(series_ids), -1, dtype=np.int64)
    if not len(series_ids):
        return out
    rows = _rows_upto(run, series_ids, p)
    rows = rows[run.table.status[rows] == 0]
    if not len(rows):
        return out
    unique, inverse = np.unique(run.table.series_of_row[rows], return_inverse=True)
    best = np.full(len(unique), -1, dtype=np.int64)
    np.maximum.at(best, inverse, run.table.positions(run.index, rows))
    slot = {int(s): i for i, s in enumerate(series_ids)}
    out[[slot[int(u)] for u in unique]] = best
    return out


def _history(run, series_ids: np.ndarray, upto: int) -> dict[int, dict[int, int]]:
    """series id -> {commit position: status} for positions <= ``upto`` (only the rows stored;
    for the few series that joined)."""
    if not len(series_ids):
        return {}
    rows = _rows_upto(run, series_ids, upto)
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
