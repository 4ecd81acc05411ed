"""One asv result file (``results/<machine>/<commit>-<env>.json``, api version 2) parsed into
compact numpy arrays: its rows' values, stats and samples, checked against asv's format, read
through asv_results.safe_read. Runs in the parse workers too (asv_results.data fans files out to
them), so it imports only json's reader and numpy, never pandas.

asv's conventions kept here: a NaN result means the benchmark was skipped, ``null`` means it
failed (and a whole-benchmark ``null`` means every combination failed); parameter values are
stored as ``repr()`` strings in ``itertools.product`` order; CIs may be ``-Infinity``/``Infinity``
when there were too few samples.
"""

from __future__ import annotations

import ast
import gc
import itertools
import math
from functools import lru_cache
from pathlib import Path

import numpy as np

from asv_results.safe_read import date_problem, read_json

SUPPORTED_RESULT_VERSION = 2
STATS_KEYS = ("ci_99_a", "ci_99_b", "q_25", "q_75", "number", "repeat")
REQUIRED_RESULT_KEYS = ("commit_hash", "env_name", "date", "result_columns", "results")
# A benchmark's parameter grid larger than this is not a real one (a whole-benchmark failure
# would otherwise make one row per combination of a grid a small file can describe).
MAX_COMBINATIONS = 1_000_000


def read_json_file(path: Path, root: Path | None = None) -> tuple[object | None, str | None]:
    """Return (document, None) or (None, reason), read with the limits of asv_results.safe_read
    (``root``: the folder the file must stay inside; default its own). Accepts asv's NaN/Infinity."""
    path = Path(path)
    return read_json(path, path.parent if root is None else Path(root))


def _check_result_document(doc: object) -> str | None:
    """Reason this is not a usable asv result (version 2) document, or None."""
    if not isinstance(doc, dict):
        return f"not an asv result file (top level is {type(doc).__name__}, expected an object)"
    missing = [k for k in REQUIRED_RESULT_KEYS if k not in doc]
    version = doc.get("version")
    if version != SUPPORTED_RESULT_VERSION and ("results" in doc or "commit_hash" in doc):
        return f"unsupported asv result format version {version!r} (this reader understands {SUPPORTED_RESULT_VERSION})"
    if missing:
        return f"not an asv result file (missing {', '.join(missing)})"
    if not isinstance(doc["results"], dict) or not isinstance(doc["result_columns"], list):
        return "not an asv result file ('results' must be an object and 'result_columns' a list)"
    if not all(isinstance(c, str) for c in doc["result_columns"]):
        return "not an asv result file ('result_columns' must be a list of names)"
    problem = date_problem(doc["date"])
    if problem is not None:
        return f"not an asv result file ({problem})"
    for key in ("commit_hash", "env_name"):
        if not isinstance(doc[key], str) or not doc[key]:
            return f"not an asv result file ('{key}' is {doc[key]!r}, expected a non-empty string)"
    if "result" not in doc["result_columns"]:
        return "not an asv result file ('result_columns' has no 'result')"
    return None


@lru_cache(maxsize=65536)
def parse_param_value(text: str):
    """asv stores parameter values as repr() strings: "16" -> 16, "'fused'" -> 'fused'."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


# --------------------------------------------------------------------------- one file (any process)


def _float_array(column: list) -> np.ndarray:
    """asv numbers -> float64 (None and anything that is not a number -> NaN)."""
    kinds = set(map(type, column))
    if kinds <= {float, int, type(None)}:
        try:
            return np.array(column, dtype=float)
        except OverflowError:  # an int too large for a float: element by element below
            pass
    return np.array([_to_float_or_nan(v) for v in column], dtype=float)


def _sample_array(samples: list[list]) -> np.ndarray:
    """The samples lists, concatenated, as float64. Fast path: numpy's own type discovery, one
    pass that converts as it goes, gives float64 or int64 only when every sample is a number
    (bools among floats become 1.0 / 0.0, as _float_array makes them); anything else (None, a
    string, a list, an int too large) is converted value by value."""
    flat = list(itertools.chain.from_iterable(samples))
    try:
        array = np.array(flat)
    except (ValueError, OverflowError):  # lists of other lengths inside: not numbers
        array = None
    if array is not None and array.ndim == 1 and array.dtype.kind in "fiu":
        return array.astype(float, copy=False)
    return _float_array(flat)


def _to_float_or_nan(v) -> float:
    if isinstance(v, (int, float)):
        try:
            return float(v)
        except OverflowError:
            return math.nan
    return math.nan


def _parse_result_file(path: str, machine: str, root: str) -> dict:
    """Read one result file into compact arrays (runs in a worker process or in this one).

    Returns {"path", "reason"} for an unusable file, else the file's identity, its benchmarks
    ``(name, params, version, n_rows)`` in file order, the per-benchmark problems, and the rows
    of the usable benchmarks as arrays: value, failed, stats (len(STATS_KEYS) x n) and the
    samples (flat values + one length per row, -1 for None).
    """
    doc, reason = read_json_file(Path(path), Path(root))
    if reason is None:
        reason = _check_result_document(doc)
    if reason is not None:
        return {"path": path, "reason": reason}
    columns = doc["result_columns"]
    benches, problems = [], []
    values, failed, samples, sample_lengths = [], [], [], []
    stats: dict[str, list] = {k: [] for k in STATS_KEYS}
    for name, row in doc["results"].items():
        if row is None:
            row = []
        if not isinstance(row, list):
            problems.append((name, f"row is {type(row).__name__}, expected a list"))
            continue
        cols = dict(zip(columns, row))
        params = cols.get("params") or []
        if not isinstance(params, list) or not all(isinstance(p, list) for p in params):
            problems.append((name, "'params' is not a list of lists"))
            continue
        if not all(isinstance(v, (str, int, float)) for p in params for v in p):
            problems.append((name, "'params' holds values that are not parameter reprs (strings)"))
            continue
        n = math.prod(len(p) for p in params)
        if n > MAX_COMBINATIONS:
            problems.append((name, f"a parameter grid of {n:,} combinations (the limit is {MAX_COMBINATIONS:,})"))
            continue
        result = cols.get("result")
        if result is None:
            result = [None] * n  # the whole benchmark failed
        elif not isinstance(result, list):
            result = [result]
        if len(result) != n:
            problems.append((name, f"{len(result)} results for {n} parameter combinations"))
            continue
        per_combo, problem = {}, None
        for key in (*(f"stats_{k}" for k in STATS_KEYS), "samples"):
            column = cols.get(key)
            if column is None:
                column = [None] * n
            elif not isinstance(column, list) or len(column) != n:
                problem = f"'{key}' does not have one entry per parameter combination"
                break
            per_combo[key] = column
        if problem is not None:
            problems.append((name, problem))
            continue
        benches.append((name, params, cols.get("version"), n))
        values.extend(result)
        failed.extend([r is None for r in result])
        for k in STATS_KEYS:
            stats[k].extend(per_combo[f"stats_{k}"])
        column = per_combo["samples"]
        present = [s for s in column if type(s) is list]
        samples.extend(present)
        if len(present) == n:
            sample_lengths.extend(map(len, present))
        else:
            sample_lengths.extend([len(s) if type(s) is list else -1 for s in column])
    return {
        "path": path, "reason": None, "machine": machine, "env_name": str(doc["env_name"]),
        "commit_hash": doc["commit_hash"], "date": int(doc["date"]), "benches": benches,
        # the run's identity asv copies in (gpu, driver, torch, ...): the runner state reads it from here
        "params": doc["params"] if isinstance(doc.get("params"), dict) else {},
        "problems": problems, "values": _float_array(values), "failed": np.array(failed, dtype=bool),
        "stats": np.stack([_float_array(stats[k]) for k in STATS_KEYS]) if values else np.empty((len(STATS_KEYS), 0)),
        "sample_values": _sample_array(samples),
        "sample_lengths": np.array(sample_lengths, dtype=np.int64),
    }


def parse_chunk(tasks: list[tuple[str, str, str]]) -> list[dict]:
    """Parse (path, machine, results folder) triples. json.loads builds only acyclic containers,
    which reference counting frees: the cyclic GC has nothing to find there, so it is paused meanwhile."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return [_parse_result_file(path, machine, root) for path, machine, root in tasks]
    finally:
        if was_enabled:
            gc.enable()
