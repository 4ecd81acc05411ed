"""Load the stored profile passes (results/profiles/<machine>/<commit>.json, written by
`python -m benchmarks.profile --save`) into one tidy DataFrame (pure; no Dash here).

One row per (machine, commit, case, impl, kernel). A broken or foreign file is reported with its
reason and skipped, and so is one bad entry inside a file (a number that is Infinity, a missing
key); the rest loads. Files are read with the loader's limits (asv_results.safe_read: regular files
inside the results folder, size and nesting capped, sane dates). Nothing is ever written here.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from asv_results.safe_read import date_problem, inside, read_json

PROFILES_DIRNAME = "profiles"
COLUMNS = ["machine", "commit_hash", "date", "case", "impl", "device", "kernel", "launches_per_call",
           "seconds_per_call", "host_seconds_per_call", "trace"]


@dataclass
class LoadedProfiles:
    frame: pd.DataFrame  # COLUMNS; a profiled impl without kernels has one row with kernel None
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason): files or entries left out
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


class BadValue(ValueError):
    """A value in a profile pass that cannot be used (the message says which and why)."""


def _finite(value, what: str, minimum: float | None = 0.0) -> float:
    """A finite number (>= minimum), else BadValue naming it: json reads Infinity and NaN too."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadValue(f"{what} is {value!r}, expected a number")
    x = float(value)
    if not math.isfinite(x) or (minimum is not None and x < minimum):
        raise BadValue(f"{what} is {value!r}, expected a finite number" + ("" if minimum is None else " >= 0"))
    return x


def _date_of(doc: dict) -> pd.Timestamp:
    problem = date_problem(doc.get("date"))  # the loader's rule: milliseconds, 1970 to 2200
    if problem is not None:
        raise BadValue(problem)
    return pd.to_datetime(int(doc["date"]), unit="ms")


def _entry_rows(entry, machine: str, commit: str, date) -> tuple[list[tuple], tuple | None]:
    """One case x impl entry: its kernel rows, or the reason it was not profiled."""
    case, impl = str(entry["case"]), str(entry["impl"])
    if "skipped" in entry:
        return [], (machine, commit, case, impl, str(entry["skipped"]))
    s = entry["summary"]
    trace = s.get("trace")
    common = (machine, commit, date, case, impl, str(s["device"]))
    tail = (_finite(s["host_seconds_per_call"], "host_seconds_per_call"), trace if isinstance(trace, str) else None)
    if not s["kernels"]:
        return [(*common, None, 0.0, 0.0, *tail)], None
    return [(*common, str(k["name"]), _finite(k["launches_per_call"], "launches_per_call"),
             _finite(k["seconds_per_call"], "seconds_per_call"), *tail) for k in s["kernels"]], None


def _rows_of(doc: dict, path: Path) -> tuple[list[tuple], list[tuple], list[str]]:
    """(kernel rows, not-profiled rows, reasons for entries left out) of one pass. A file that is
    not a pass raises; one bad entry is left out with its reason and the rest of the file loads."""
    if not isinstance(doc, dict) or doc.get("version") != 1 or not isinstance(doc.get("profiles"), list):
        raise BadValue("not a profile pass of this suite (version 1 with a 'profiles' list)")
    machine, commit = str(doc["machine"]), str(doc["commit_hash"])
    date = _date_of(doc)
    rows, skipped, bad = [], [], []
    for i, entry in enumerate(doc["profiles"]):
        try:
            entry_rows, not_profiled = _entry_rows(entry, machine, commit, date)
        except (BadValue, KeyError, TypeError, AttributeError) as exc:
            what = f"{entry.get('case')} [{entry.get('impl')}]" if isinstance(entry, dict) else f"entry {i}"
            bad.append(f"{what}: {_reason(exc)}")
            continue
        rows += entry_rows
        if not_profiled:
            skipped.append(not_profiled)
    return rows, skipped, bad


def _reason(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing {exc}"
    return str(exc) if isinstance(exc, BadValue) else f"{type(exc).__name__}: {exc}"


def load_profiles(results_dir: str | Path) -> LoadedProfiles:
    rows, not_profiled, bad = [], [], []
    for path in sorted(profiles_dir(results_dir).glob("*/*.json")):
        doc, reason = read_json(path, Path(results_dir))
        if reason is not None:
            bad.append((str(path), reason))
            continue
        try:
            file_rows, file_skipped, bad_entries = _rows_of(doc, path)
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
            bad.append((str(path), _reason(exc)))
            continue
        rows += file_rows
        not_profiled += file_skipped
        bad += [(str(path), f"entry left out: {why}") for why in bad_entries]
    return LoadedProfiles(
        frame=pd.DataFrame(rows, columns=COLUMNS),
        skipped=bad,
        not_profiled=pd.DataFrame(not_profiled, columns=["machine", "commit_hash", "case", "impl", "reason"]),
    )


def trace_file(results_dir: str | Path, relative: str) -> Path | None:
    """The trace file a summary names, if it is a readable regular file inside the profiles
    folder and, once every symlink is resolved, inside the results folder too: a profiles folder
    that is itself a symlink (git can commit one) must not lead anywhere else."""
    folder = profiles_dir(results_dir)
    candidate = folder / relative
    if not (inside(candidate, results_dir) and inside(candidate, folder)) or os.path.realpath(candidate) == \
            os.path.realpath(folder):
        return None
    real = Path(os.path.realpath(candidate))
    if not real.is_file() or not os.access(real, os.R_OK):
        return None
    return real
