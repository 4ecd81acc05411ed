"""Load the stored profile passes (results/profiles/<machine>/<commit>.json, written by
`python -m benchmarks.profile --save`) into one tidy DataFrame (pure; no Dash here).

One row per (machine, commit, case, impl, kernel). A broken or foreign file is reported with its
reason and skipped; the rest loads. Files are read with the loader's limits (dashboard.safe_read:
regular files inside the results folder, size and nesting capped, sane dates). Nothing is ever
written here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from dashboard.safe_read import date_problem, read_json

PROFILES_DIRNAME = "profiles"
COLUMNS = ["machine", "commit_hash", "date", "case", "impl", "device", "kernel", "launches_per_call",
           "seconds_per_call", "host_seconds_per_call", "trace"]


@dataclass
class LoadedProfiles:
    frame: pd.DataFrame  # COLUMNS; a profiled impl without kernels has one row with kernel None
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    not_profiled: pd.DataFrame = field(default_factory=pd.DataFrame)  # machine, commit_hash, case, impl, reason


def profiles_dir(results_dir: str | Path) -> Path:
    return Path(results_dir) / PROFILES_DIRNAME


def signature(results_dir: str | Path) -> tuple:
    """Names, sizes and mtimes of the stored passes: changes when a pass is added or replaced."""
    entries = []
    for path in sorted(profiles_dir(results_dir).glob("*/*.json")):
        try:
            st = path.stat()
        except OSError:
            continue
        entries.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(entries)


def _rows_of(doc: dict, path: Path) -> tuple[list[tuple], list[tuple]]:
    if not isinstance(doc, dict) or doc.get("version") != 1 or not isinstance(doc.get("profiles"), list):
        raise ValueError("not a profile pass of this suite (version 1 with a 'profiles' list)")
    machine, commit = str(doc["machine"]), str(doc["commit_hash"])
    problem = date_problem(doc.get("date"))
    if problem is not None:
        raise ValueError(problem)
    date = pd.to_datetime(int(doc["date"]), unit="ms")
    rows, skipped = [], []
    for entry in doc["profiles"]:
        case, impl = str(entry["case"]), str(entry["impl"])
        if "skipped" in entry:
            skipped.append((machine, commit, case, impl, str(entry["skipped"])))
            continue
        s = entry["summary"]
        trace = s.get("trace")
        common = (machine, commit, date, case, impl, s["device"])
        tail = (float(s["host_seconds_per_call"]), trace)
        if not s["kernels"]:
            rows.append((*common, None, 0.0, 0.0, *tail))
        for k in s["kernels"]:
            rows.append((*common, str(k["name"]), float(k["launches_per_call"]), float(k["seconds_per_call"]), *tail))
    return rows, skipped


def load_profiles(results_dir: str | Path) -> LoadedProfiles:
    rows, not_profiled, bad = [], [], []
    for path in sorted(profiles_dir(results_dir).glob("*/*.json")):
        doc, reason = read_json(path, Path(results_dir))
        if reason is not None:
            bad.append((str(path), reason))
            continue
        try:
            file_rows, file_skipped = _rows_of(doc, path)
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
            bad.append((str(path), f"{type(exc).__name__}: {exc}"))
            continue
        rows += file_rows
        not_profiled += file_skipped
    return LoadedProfiles(
        frame=pd.DataFrame(rows, columns=COLUMNS),
        skipped=bad,
        not_profiled=pd.DataFrame(not_profiled, columns=["machine", "commit_hash", "case", "impl", "reason"]),
    )


def trace_file(results_dir: str | Path, relative: str) -> Path | None:
    """The trace file a summary names, if it is a real file inside the profiles folder."""
    root = profiles_dir(results_dir).resolve()
    candidate = (root / relative).resolve()
    if root not in candidate.parents or not candidate.is_file() or not os.access(candidate, os.R_OK):
        return None
    return candidate
