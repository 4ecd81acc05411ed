"""Why a value is n/a: the reasons the suite keeps beside asv's results, where asv keeps none
(results/reasons/<machine>/<commit>.reasons, written by benchmarks/skip_reasons.py: "cublaslt has
no gelu epilogue", "no GPU", "liger-kernel is not installed", a failure's last lines).

Read through safe_read like every other file in results/. A broken file is reported (the pages
say which and why) and gives no reasons; an entry that is not one is left out and counted. Each
file is read once per change of its size or modification time (torch-free, no Dash).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from asv_results.safe_read import read_json

DIRNAME = "reasons"  # benchmarks.skip_reasons.DIRNAME
VERSION = 1
EVERY_COMBINATION = "*"  # benchmarks.skip_reasons.EVERY_COMBINATION: one reason for all of a benchmark's
STATUSES = ("skipped", "failed")
# benchmarks.skip_reasons': JSON not named .json (asv warns about those), and the older name
SUFFIX, LEGACY_SUFFIX = ".reasons", ".json"
MAX_REASONS_BYTES = 16 << 20  # a commit's reasons are a few KB; beyond this it is not one


def series_key(benchmark: str, names, reprs) -> tuple[str, tuple]:
    """How an entry meets a series: its benchmark and (parameter name, asv's repr) pairs, sorted
    (an entry stores values, asv stores their repr())."""
    return str(benchmark), tuple(sorted(zip(map(str, names), map(str, reprs))))


@dataclass(frozen=True)
class Reasons:
    """One commit's reasons on one machine."""

    by_series: dict[tuple[str, tuple], tuple[str, str]] = field(default_factory=dict)  # -> (status, reason)
    problem: str | None = None  # why the file, or some of its entries, were left out
    # (benchmark, status) -> reason: every combination of the benchmark with that status
    by_benchmark: dict[tuple[str, str], str] = field(default_factory=dict)

    def at(self, key: tuple[str, tuple], status: str) -> tuple[str, str] | None:
        """The (status, reason) of a series_key with that status: its own entry, else the reason
        its benchmark's whole-benchmark entry gives every combination of that status."""
        found = self.by_series.get(key)
        if found is None and (key[0], status) in self.by_benchmark:
            found = status, self.by_benchmark[key[0], status]
        return found


NONE = Reasons()


def path_of(results_dir: Path, machine: str, commit: str) -> Path:
    return Path(results_dir) / DIRNAME / machine / f"{commit}{SUFFIX}"


def _file_name(listed: frozenset[str], commit: str) -> str | None:
    """The commit's reasons file among a folder's names: the current name, else the older one."""
    return next((name for name in (f"{commit}{SUFFIX}", f"{commit}{LEGACY_SUFFIX}") if name in listed), None)


def reasons_at(results_dir, machine: str, commit: str | None) -> Reasons:
    """The reasons recorded for ``commit`` on ``machine``; NONE where there is no file."""
    folder = Path(results_dir) / DIRNAME / machine
    name = _file_name(_listed(str(folder)), commit) if commit else None
    if name is None:
        return NONE
    path = folder / name
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # absent (the usual case), or a name the OS refuses
        return NONE if not os.path.islink(path) else _read(str(path), str(results_dir), -1, -1)
    return _read(str(path), str(results_dir), st.st_size, st.st_mtime_ns)


def _listed(folder: str) -> frozenset[str]:
    """The file names in a machine's reasons folder (one listing per change of the folder: a
    trend asks about every commit it shows)."""
    try:
        mtime = os.stat(folder).st_mtime_ns
    except (OSError, ValueError):
        return frozenset()
    return _listing(folder, mtime)


@lru_cache(maxsize=64)
def _listing(folder: str, _mtime_ns: int) -> frozenset[str]:
    try:
        with os.scandir(folder) as entries:
            return frozenset(e.name for e in entries)
    except OSError:
        return frozenset()


@lru_cache(maxsize=1024)
def _read(path: str, root: str, size: int, mtime_ns: int) -> Reasons:
    doc, reason = read_json(Path(path), Path(root), max_bytes=MAX_REASONS_BYTES)
    where = os.path.relpath(path, root)
    if reason is not None:
        return Reasons(problem=f"{where} left out: {reason}")
    if not isinstance(doc, dict) or doc.get("version") != VERSION or not isinstance(doc.get("entries"), list):
        return Reasons(problem=f"{where} left out: not a reasons file (version {VERSION} with an 'entries' list)")
    out, whole, bad = {}, {}, 0
    for e in doc["entries"]:
        params = e.get("params") if isinstance(e, dict) else None
        if not ((isinstance(params, dict) or params == EVERY_COMBINATION) and isinstance(e.get("benchmark"), str)
                and e.get("status") in STATUSES and isinstance(e.get("reason"), str)):
            bad += 1
        elif params == EVERY_COMBINATION:
            whole[e["benchmark"], e["status"]] = e["reason"]
        else:
            out[series_key(e["benchmark"], params.keys(), map(repr, params.values()))] = (e["status"], e["reason"])
    problem = f"{where}: {bad} entr{'y' if bad == 1 else 'ies'} left out (not a benchmark, params, status " \
              "and reason)" if bad else None
    return Reasons(out, problem, whole)


def _keys(rows, series) -> list[tuple[str, tuple]]:
    """Each row's series_key, from its series' parameter names and reprs (``series``: a run's
    series frame, indexed by the rows' ``series`` ids)."""
    mine = series.loc[rows["series"].unique(), ["benchmark", "param_names", "param_reprs"]]
    key_of = {sid: series_key(b, n, r) for sid, b, n, r in zip(mine.index, *(mine[c] for c in mine.columns))}
    return [key_of[sid] for sid in rows["series"]]


def reason_column(rows, series, results_dir, machine: str) -> list[str]:
    """The recorded reason of each row that was skipped or failed ("" for the others and where
    none was recorded). ``rows``: commit_hash, status and series (ids into ``series``)."""
    if not len(rows):
        return []
    out = [""] * len(rows)
    na = rows["status"].astype(str).isin(STATUSES).to_numpy().copy()
    if not na.any():
        return out
    listed = _listed(str(Path(results_dir) / DIRNAME / machine))  # one listing, not a look per commit
    if not listed:
        return out
    commits = rows["commit_hash"].astype(str).to_numpy()
    na &= np.fromiter((_file_name(listed, c) is not None for c in commits), dtype=bool, count=len(commits))
    if not na.any():
        return out
    at: dict[str, Reasons] = {}
    statuses = rows["status"].astype(str).to_numpy()[na]
    for i, commit, key, status in zip(na.nonzero()[0], commits[na], _keys(rows[na], series), statuses):
        reasons = at[commit] if commit in at else at.setdefault(commit, reasons_at(results_dir, machine, commit))
        found = reasons.at(key, status)
        out[i] = found[1] if found else ""
    return out


def why_na(rows, series, results_dir, machine: str, commit: str, max_listed: int = 4
           ) -> tuple[list[str], int, str | None]:
    """("n × reason" for the commonest recorded reasons among ``rows`` (one commit's) that were
    skipped or failed, how many of them have a recorded reason, the reasons file's problem or None)."""
    reasons = reasons_at(results_dir, machine, commit)
    na = rows[rows["status"].astype(str).isin(STATUSES)] if len(rows) else rows
    counts: dict[str, int] = {}
    for key, status in (zip(_keys(na, series), na["status"].astype(str)) if len(na) else ()):
        found = reasons.at(key, status)
        if found:
            counts[_first_line(found[1])] = counts.get(_first_line(found[1]), 0) + 1
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    listed = [f"{n} × {r}" for r, n in top[:max_listed]]
    if len(top) > max_listed:
        listed.append(f"{len(top) - max_listed} other reason(s)")
    return listed, sum(counts.values()), reasons.problem


def _first_line(reason: str, limit: int = 160) -> str:
    """A failure's reason is a traceback's tail: its last non-empty line says what went wrong."""
    lines = [line.strip() for line in reason.strip().splitlines() if line.strip()]
    text = lines[-1] if lines else ""
    return text if len(text) <= limit else text[: limit - 1] + "…"
