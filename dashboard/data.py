"""Load an asv results directory into one tidy pandas DataFrame (no Dash here).

Reads asv's documented on-disk format directly (api version 2, see asv's
docs/source/dev.rst): ``results/benchmarks.json``, ``results/<machine>/machine.json`` and
``results/<machine>/<commit>-<env>.json`` whose ``results`` rows are lists ordered by
``result_columns``. One output row per (machine, env_name, commit_hash, benchmark,
parameter combination).

One file is parsed by :mod:`dashboard.result_file` (asv's conventions: NaN skipped, null
failed, parameters as ``repr()`` strings in ``itertools.product`` order); here the files are
fanned out to parse workers and the frame is assembled.

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

import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

# commit_order (a frame's commits in order), ResultsDirError and SkippedFile live in their own
# modules; importers still take them from here.
from dashboard.commit_order import commits_in_order as commit_order  # noqa: F401
from dashboard.results_folder import ResultsDirError, SkippedFile, list_results, read_benchmarks  # noqa: F401
from dashboard.result_file import STATS_KEYS, parse_chunk, parse_param_value
from dashboard.worker_processes import available_cpus, process_pool, stop_workers

if TYPE_CHECKING:
    import pandas as pd
# pandas is imported where frames are built, not at import: the parse workers this module
# spawns need only json and numpy, and start that much sooner.

STATUS_OK, STATUS_SKIPPED, STATUS_FAILED = "ok", "skipped", "failed"

# Fixed columns; a benchmark parameter with one of these names becomes "param_<name>".
FIXED_COLUMNS = (
    "machine", "env_name", "commit_hash", "date", "benchmark", "params_key",
    "value", "status", "unit", *STATS_KEYS, "samples", "benchmark_version",
)
# load_results(samples=...): one list (or None) per row in a "samples" column, or a compact
# SampleStore plus an integer SAMPLE_ROW column that indexes it.
SAMPLES_LISTS, SAMPLES_COMPACT = "lists", "compact"
SAMPLE_ROW = "sample_row"
# Below this many bytes of result files a process pool costs more than it saves.
PARALLEL_MIN_BYTES = 24 << 20
FILES_PER_TASK = 8


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
        return parse_chunk(tasks)
    chunks = [tasks[i:i + FILES_PER_TASK] for i in range(0, len(tasks), FILES_PER_TASK)]
    try:
        pool = process_pool(jobs)
        futures = [pool.submit(parse_chunk, chunk) for chunk in chunks]
    except Exception:  # no processes here (sandbox, daemonic parent): one core it is
        return parse_chunk(tasks)
    parsed: list[dict] = []
    try:
        for chunk, future in zip(chunks, futures):
            try:
                parsed.extend(future.result())
            except Exception:  # a worker died or could not start (BrokenProcessPool)
                parsed.extend(parse_chunk(chunk))
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
