"""Load an asv results directory into one tidy pandas DataFrame (no Dash here).

Reads asv's documented on-disk format directly (api version 2, see asv's
docs/source/dev.rst): ``results/benchmarks.json``, ``results/<machine>/machine.json`` and
``results/<machine>/<commit>-<env>.json`` whose ``results`` rows are lists ordered by
``result_columns``. One output row per (machine, env_name, commit_hash, benchmark,
parameter combination).

asv's conventions kept here: a NaN result means the benchmark was skipped, ``null`` means
it failed (and a whole-benchmark ``null`` means every combination failed); parameter
values are stored as ``repr()`` strings in ``itertools.product`` order; CIs may be
``-Infinity``/``Infinity`` when there were too few samples.

The folder is listed by :mod:`dashboard.results_folder` (the walk the dashboard's cache and
reload check use too). Any file that cannot be used is listed in ``LoadReport.skipped`` with the
reason and the rest still loads. Every file is read through :mod:`dashboard.safe_read`: regular files inside the
results folder only, with a size and a nesting limit, and commit dates in a sane range, so no
file in results/ can hang, exhaust or crash the dashboard or the gate.

Speed (500 commits x 2,000 series, 200 MB): most of the time is ``json.loads``, and 70 % of
that is the raw samples. Result files are parsed on every available core (a spawned process
pool; this process takes chunks too) into compact numpy arrays per file, never Python objects
per row; the frame is then assembled from integer codes. Samples stay a flat float array
(:class:`SampleStore`) unless asked for as lists (``samples="lists"``, the default, one list
per row as asv stores them); the dashboard keeps them compact and builds lists only for the
rows a view needs. Nothing is cached on disk and nothing is written into the results dir.
"""

from __future__ import annotations

import ast
import gc
import itertools
import math
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

# commit_order (a frame's commits in order), ResultsDirError and SkippedFile live in their own
# modules; importers still take them from here.
from dashboard.commit_order import commits_in_order as commit_order  # noqa: F401
from dashboard.results_folder import ResultsDirError, SkippedFile, list_results, read_benchmarks  # noqa: F401
from dashboard.safe_read import date_problem, read_json
from dashboard.worker_processes import available_cpus, stop_workers, parse_pool

if TYPE_CHECKING:
    import pandas as pd
# pandas is imported where frames are built, not at import: the parse workers this module
# spawns need only json and numpy, and start that much sooner.

SUPPORTED_RESULT_VERSION = 2
STATS_KEYS = ("ci_99_a", "ci_99_b", "q_25", "q_75", "number", "repeat")
STATUS_OK, STATUS_SKIPPED, STATUS_FAILED = "ok", "skipped", "failed"

# Fixed columns; a benchmark parameter with one of these names becomes "param_<name>".
FIXED_COLUMNS = (
    "machine", "env_name", "commit_hash", "date", "benchmark", "params_key",
    "value", "status", "unit", *STATS_KEYS, "samples", "benchmark_version",
)
REQUIRED_RESULT_KEYS = ("commit_hash", "env_name", "date", "result_columns", "results")
# load_results(samples=...): one list (or None) per row in a "samples" column, or a compact
# SampleStore plus an integer SAMPLE_ROW column that indexes it.
SAMPLES_LISTS, SAMPLES_COMPACT = "lists", "compact"
SAMPLE_ROW = "sample_row"
# Below this many bytes of result files a process pool costs more than it saves.
PARALLEL_MIN_BYTES = 24 << 20
FILES_PER_TASK = 8
# A benchmark's parameter grid larger than this is not a real one (a whole-benchmark failure
# would otherwise make one row per combination of a grid a small file can describe).
MAX_COMBINATIONS = 1_000_000


@dataclass
class LoadReport:
    """What was read, what was skipped (whole files) and what was partial (inside files)."""

    loaded_files: list[str] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.skipped and not self.problems

    def lines(self) -> list[str]:
        out = [f"skipped {s.path}: {s.reason}" for s in self.skipped]
        return out + [f"partial: {p}" for p in self.problems]


@dataclass
class LoadedResults:
    frame: pd.DataFrame
    load_report: LoadReport
    benchmarks: dict  # benchmarks.json content, name -> metadata ({} when absent)
    machines: dict  # machine name -> machine.json content ({} when absent)
    param_columns: list[str]  # frame columns that hold benchmark parameters
    samples: SampleStore | None = None  # samples="compact": the samples, indexed by SAMPLE_ROW


@dataclass
class SampleStore:
    """Every row's raw samples in one flat float array (no Python object per row or sample).

    Row ``i`` has ``flat[start[i]:start[i] + length[i]]``; ``length[i] == -1`` means asv stored
    no samples list (``null``, not recorded, or the benchmark failed).
    """

    flat: np.ndarray  # float64
    start: np.ndarray  # int64, one per row
    length: np.ndarray  # int64, one per row; -1: None

    def __len__(self) -> int:
        return len(self.length)

    def lists(self, rows=None) -> list:
        """The samples of ``rows`` (loader row numbers; all rows when None) as asv's lists/None."""
        rows = np.arange(len(self.length)) if rows is None else np.asarray(rows, dtype=np.int64)
        lengths = self.length[rows]
        present = lengths > 0
        counts = np.where(present, lengths, 0)
        total = int(counts.sum())
        if total:
            # gather the wanted slices with one index array, convert once, then cut
            ends = np.cumsum(counts)
            offsets = np.repeat(self.start[rows] - (ends - counts), counts)
            values = self.flat[np.arange(total, dtype=np.int64) + offsets].tolist()
        else:
            values = []
        it = iter(values)
        islice = itertools.islice
        return [None if n < 0 else list(islice(it, n)) for n in lengths.tolist()]


def read_json_file(path: Path, root: Path | None = None) -> tuple[object | None, str | None]:
    """Return (document, None) or (None, reason), read with the limits of dashboard.safe_read
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
    """The samples lists, concatenated, as float64 (fast path: they hold only numbers)."""
    total = sum(map(len, samples))
    kinds = set(map(type, itertools.chain.from_iterable(samples)))
    if kinds <= {float, int}:
        try:
            return np.fromiter(itertools.chain.from_iterable(samples), dtype=float, count=total)
        except OverflowError:
            pass
    return _float_array(list(itertools.chain.from_iterable(samples)))


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
        "problems": problems, "values": _float_array(values), "failed": np.array(failed, dtype=bool),
        "stats": np.stack([_float_array(stats[k]) for k in STATS_KEYS]) if values else np.empty((len(STATS_KEYS), 0)),
        "sample_values": _sample_array(samples),
        "sample_lengths": np.array(sample_lengths, dtype=np.int64),
    }


def _parse_chunk(tasks: list[tuple[str, str, str]]) -> list[dict]:
    """Parse (path, machine, results folder) triples. json.loads builds only acyclic containers,
    which reference counting frees: the cyclic GC has nothing to find there, so it is paused meanwhile."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return [_parse_result_file(path, machine, root) for path, machine, root in tasks]
    finally:
        if was_enabled:
            gc.enable()


def _parse_files(tasks: list[tuple[str, str, str]], jobs: int | None) -> list[dict]:
    """Parse every file, in ``tasks`` order; in worker processes when it pays.

    ``jobs``: parse processes (None: every available core when the files are large enough to
    gain from it; 1: this process only). The pool is spawned, as forking a threaded web server
    is unsafe. This process does not parse meanwhile: it must stay free to take the workers'
    arrays off the pipe (a json.loads here holds the GIL for milliseconds and would stall
    them). Any trouble with the pool (cannot start, a worker died) and the affected chunks are
    parsed here instead.
    """
    if jobs is None:
        size = 0
        for path, _, _ in tasks:
            try:
                size += os.path.getsize(path)
            except OSError:
                pass
        jobs = available_cpus() if size >= PARALLEL_MIN_BYTES else 1
    jobs = max(1, min(int(jobs), len(tasks) // FILES_PER_TASK))
    if jobs <= 1:
        return _parse_chunk(tasks)
    chunks = [tasks[i:i + FILES_PER_TASK] for i in range(0, len(tasks), FILES_PER_TASK)]
    try:
        pool = parse_pool(jobs)
        futures = [pool.submit(_parse_chunk, chunk) for chunk in chunks]
    except Exception:  # no processes here (sandbox, daemonic parent): one core it is
        return _parse_chunk(tasks)
    parsed: list[dict] = []
    try:
        for chunk, future in zip(chunks, futures):
            try:
                parsed.extend(future.result())
            except Exception:  # a worker died or could not start (BrokenProcessPool)
                parsed.extend(_parse_chunk(chunk))
    except BaseException:  # SIGTERM or Ctrl-C during the load: the workers stop with it
        stop_workers(pool)
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return parsed


# --------------------------------------------------------------------------- all files -> one frame


@dataclass
class _Layout:
    """Per (benchmark, params grid): its combinations' global numbers, computed once."""

    first_combo: int
    n_combos: int


class _Assembler:
    """Numbers every distinct (benchmark, params grid) combination once; rows only carry codes."""

    def __init__(self, benchmarks_meta: dict):
        self.meta = benchmarks_meta
        self.layouts: dict[tuple, _Layout] = {}
        self.combo_key_codes: list[int] = []  # params_key code per global combination
        self.combo_params: dict[str, dict[int, list]] = {}  # column -> {first_combo: values}
        self.params_keys: dict[str, int] = {}
        self.bench_names: dict[str, int] = {}
        self.units: dict[str, str | None] = {}

    def layout(self, name: str, params: list) -> _Layout:
        cache_key = (name, tuple(tuple(p) for p in params))
        found = self.layouts.get(cache_key)
        if found is not None:
            return found
        meta = self.meta.get(name) if isinstance(self.meta.get(name), dict) else {}
        names = meta.get("param_names")
        if not isinstance(names, list) or len(names) != len(params):
            names = [f"param{i + 1}" for i in range(len(params))]  # asv's own default names
        columns = [f"param_{n}" if n in FIXED_COLUMNS else str(n) for n in names]
        combos = _product(params)
        first = len(self.combo_key_codes)
        for i, c in enumerate(columns):
            self.combo_params.setdefault(c, {})[first] = [parse_param_value(str(combo[i])) for combo in combos]
        keys = [", ".join(f"{n}={v}" for n, v in zip(names, combo)) for combo in combos]
        self.combo_key_codes.extend(self.params_keys.setdefault(k, len(self.params_keys)) for k in keys)
        built = _Layout(first, len(combos))
        self.layouts[cache_key] = built
        self.units.setdefault(name, meta.get("unit"))
        return built

    def param_column(self, column: str, combo_ids: np.ndarray, categorical: bool):
        """One parameter's value per row: a list (pandas infers the dtype, as asv's values
        vary), or with ``categorical`` a Categorical built from per-combination codes, unless
        values of different types would merge in it (1 and 1.0) or cannot be hashed."""
        import pandas as pd

        table = np.full(len(self.combo_key_codes) or 1, None, dtype=object)
        for first, values in self.combo_params[column].items():
            table[first:first + len(values)] = values
        if categorical:
            try:
                codes, uniques = pd.factorize(table)
                typed = {(type(v), v) for v in table if v is not None}
            except TypeError:  # unhashable values (a list parameter): keep objects
                typed, uniques = None, []
            if typed is not None and len(typed) == len(uniques):
                return pd.Categorical.from_codes(codes[combo_ids], pd.Index(list(uniques), dtype=object))
        return table[combo_ids].tolist()


def _product(params: list) -> list[tuple]:
    return list(itertools.product(*params)) if params else [()]


def _categorical_from_codes(codes: np.ndarray, categories: list) -> pd.Categorical:
    """Categorical built from integer codes (no hashing of a million strings).

    ``categories`` may repeat a label (several commits on one date) or hold None (unknown
    unit): repeated labels are merged and None becomes a missing value.
    """
    import pandas as pd

    unique: dict[str, int] = {}
    remap = np.array([-1 if c is None else unique.setdefault(str(c), len(unique)) for c in categories] or [-1],
                     dtype=np.int32)
    return pd.Categorical.from_codes(remap[codes] if len(codes) else codes, list(unique))


def _assemble(files: list[dict], benchmarks: dict, report: LoadReport, samples: str
              ) -> tuple[pd.DataFrame, list[str], SampleStore]:
    """The frame (rows in ``files`` order, benchmarks in file order) from the parsed files."""
    import pandas as pd

    asm = _Assembler(benchmarks)
    combo_parts, bench_parts, sizes = [], [], []
    versions: list = []
    param_columns: dict[str, None] = {}  # in first-seen order, as the columns appear
    for f in files:
        for name, problem in f["problems"]:
            report.problems.append(f"{f['path']}: benchmark {name!r} skipped: {problem}")
        for name, params, version, n in f["benches"]:
            lay = asm.layout(name, params)
            for column in (c for c, per in asm.combo_params.items() if lay.first_combo in per):
                param_columns.setdefault(column)
            combo_parts.append(lay.first_combo)
            bench_parts.append(asm.bench_names.setdefault(name, len(asm.bench_names)))
            sizes.append(n)
            versions.append(version)
        report.loaded_files.append(f["path"])
    sizes_arr = np.asarray(sizes, dtype=np.int64)
    n_rows = int(sizes_arr.sum())
    part_of_row = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes_arr)
    part_start = np.cumsum(sizes_arr) - sizes_arr
    combo_ids = (np.asarray(combo_parts, dtype=np.int64)[part_of_row] + np.arange(n_rows, dtype=np.int64)
                 - part_start[part_of_row]) if n_rows else np.empty(0, np.int64)
    bench_codes = np.asarray(bench_parts, dtype=np.int32)[part_of_row] if n_rows else np.empty(0, np.int32)
    file_codes = np.repeat(np.arange(len(files), dtype=np.int32), [len(f["values"]) for f in files])

    def cat(key: str) -> np.ndarray:
        arrays = [f[key] for f in files]
        return np.concatenate(arrays, axis=-1) if arrays else np.empty(0)

    values = cat("values") if files else np.empty(0)
    failed = cat("failed").astype(bool) if files else np.empty(0, bool)
    stats = cat("stats") if files else np.empty((len(STATS_KEYS), 0))
    lengths = cat("sample_lengths").astype(np.int64) if files else np.empty(0, np.int64)
    flat = cat("sample_values").astype(float) if files else np.empty(0)
    starts = np.cumsum(np.maximum(lengths, 0)) - np.maximum(lengths, 0)
    store = SampleStore(flat, starts, lengths)

    def per_file(key):
        return _categorical_from_codes(file_codes, [f[key] for f in files])

    status = np.where(failed, 2, np.where(np.isnan(values), 1, 0)).astype(np.int8)
    bench_names = list(asm.bench_names)
    key_codes = np.asarray(asm.combo_key_codes or [0], dtype=np.int32)[combo_ids]
    columns = {
        "machine": per_file("machine"),
        "env_name": per_file("env_name"),
        "commit_hash": per_file("commit_hash"),
        "date": pd.to_datetime(np.asarray([f["date"] for f in files], dtype=np.int64)[file_codes], unit="ms", utc=True),
        "benchmark": _categorical_from_codes(bench_codes, bench_names),
        "params_key": _categorical_from_codes(key_codes, list(asm.params_keys)),
    }
    for column in param_columns:  # compact: the dashboard's frame, where categories are cheaper
        columns[column] = asm.param_column(column, combo_ids, categorical=samples == SAMPLES_COMPACT)
    columns["value"] = values
    columns["status"] = pd.Categorical.from_codes(status, [STATUS_OK, STATUS_SKIPPED, STATUS_FAILED])
    columns["unit"] = _categorical_from_codes(bench_codes, [asm.units.get(b) for b in bench_names])
    for i, k in enumerate(STATS_KEYS):
        columns[k] = stats[i]
    if samples == SAMPLES_LISTS:
        columns["samples"] = store.lists()
    else:
        columns[SAMPLE_ROW] = np.arange(n_rows, dtype=np.int64)
    version_table = np.empty(len(versions) or 1, dtype=object)
    version_table[:len(versions)] = versions
    columns["benchmark_version"] = version_table[part_of_row].tolist()
    return pd.DataFrame(columns), list(param_columns), store


def load_results(results_dir: str | Path, machine: str | None = None, *, samples: str = SAMPLES_LISTS,
                 jobs: int | None = None) -> LoadedResults:
    """Load every asv result under ``results_dir`` (optionally one machine).

    ``samples``: ``"lists"`` puts each row's samples (a list, or None) in a ``samples`` column;
    ``"compact"`` leaves them in ``LoadedResults.samples`` and gives the frame a ``sample_row``
    column instead (``loaded.samples.lists(rows["sample_row"])``); parameter columns are then
    categorical (same values; no per-row strings to hash). ``jobs``: processes used to
    parse the files (None: all cores when there is enough to parse; 1: this process only).
    """
    if samples not in (SAMPLES_LISTS, SAMPLES_COMPACT):
        raise ValueError(f"samples must be {SAMPLES_LISTS!r} or {SAMPLES_COMPACT!r}, not {samples!r}")
    root = Path(results_dir)
    listing = list_results(root, machine)  # as the dashboard's cache lists it; ResultsDirError if unusable
    benchmarks, bench_skipped = read_benchmarks(root)
    # The report lists benchmarks.json's and the folder's problems, then the result files', in file order.
    report = LoadReport(skipped=bench_skipped + listing.skipped)
    machines = listing.machines
    tasks = [(str(root / f.relative), f.machine, str(root)) for f in listing.files]
    parsed = _parse_files(tasks, jobs)
    files: list[dict] = []
    for item in parsed:
        if item["reason"] is not None:
            report.skipped.append(SkippedFile(item["path"], item["reason"]))
        else:
            files.append(item)
    del parsed

    from dashboard.duplicates import choose  # one file per commit, by the dashboard's rule

    kept, notes = choose([(f["path"], f["machine"], f["env_name"], f["commit_hash"]) for f in files])
    files = [files[i] for i in kept]
    report.problems.extend(notes)
    # Rows go in stored-date order (ms), ties broken deterministically; the commit order the gate
    # judges by is dashboard.commit_order's (the repository's where it can be read).
    files.sort(key=lambda f: (f["date"], f["machine"], f["env_name"], f["commit_hash"]))
    frame, param_columns, store = _assemble(files, benchmarks, report, samples)
    return LoadedResults(frame, report, benchmarks, machines, param_columns,
                         store if samples == SAMPLES_COMPACT else None)
