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

Any file that cannot be used is listed in ``LoadReport.skipped`` with the reason and the
rest still loads. Columns are built as Python lists and the DataFrame is constructed
once, so 500 commits x 2,000 series load in a few seconds.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

SUPPORTED_RESULT_VERSION = 2
STATS_KEYS = ("ci_99_a", "ci_99_b", "q_25", "q_75", "number", "repeat")
STATUS_OK, STATUS_SKIPPED, STATUS_FAILED = "ok", "skipped", "failed"

# Fixed columns; a benchmark parameter with one of these names becomes "param_<name>".
FIXED_COLUMNS = (
    "machine", "env_name", "commit_hash", "date", "benchmark", "params_key",
    "value", "status", "unit", *STATS_KEYS, "samples", "benchmark_version",
)
REQUIRED_RESULT_KEYS = ("commit_hash", "env_name", "date", "result_columns", "results")


@dataclass(frozen=True)
class SkippedFile:
    path: str
    reason: str


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


class ResultsDirError(Exception):
    """The results directory itself is unusable (missing, not a directory)."""


def read_json_file(path: Path) -> tuple[object | None, str | None]:
    """Return (document, None) or (None, reason). Accepts asv's NaN/Infinity literals."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    except OSError as exc:
        return None, f"cannot read file ({exc.strerror or exc})"
    if not text.strip():
        return None, "empty file"
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
            return None, f"truncated JSON (file ends at character {len(text)} inside a value)"
        return None, f"broken JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"


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
    if not isinstance(doc["date"], (int, float)) or isinstance(doc["date"], bool) or not math.isfinite(doc["date"]):
        return f"not an asv result file ('date' is {doc['date']!r}, expected milliseconds since the epoch)"
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


@dataclass
class _BenchmarkLayout:
    """Per (benchmark, params grid): what every row of that grid gets, computed once."""

    n_combos: int
    param_values: dict[str, list]  # column name -> value per combination
    key_codes: list[int]  # params_key category code per combination


class _FrameBuilder:
    """Accumulates columns as lists; builds the DataFrame once at the end."""

    def __init__(self, benchmarks_meta: dict):
        self.meta = benchmarks_meta
        self.n_rows = 0
        self.file_codes: list[np.ndarray] = []
        self.bench_codes: list[np.ndarray] = []
        self.key_codes: list[int] = []
        self.values: list = []
        self.failed: list[bool] = []
        self.stats: dict[str, list] = {k: [] for k in STATS_KEYS}
        self.samples: list = []
        self.versions: list = []
        self.params: dict[str, list] = {}
        self.bench_names: dict[str, int] = {}
        self.params_keys: dict[str, int] = {}
        self.layouts: dict[tuple, _BenchmarkLayout] = {}
        self.units: dict[str, str | None] = {}

    def layout(self, name: str, params: list) -> _BenchmarkLayout:
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
        values = {c: [parse_param_value(str(combo[i])) for combo in combos] for i, c in enumerate(columns)}
        keys = [", ".join(f"{n}={v}" for n, v in zip(names, combo)) for combo in combos]
        codes = [self.params_keys.setdefault(k, len(self.params_keys)) for k in keys]
        built = _BenchmarkLayout(len(combos), values, codes)
        self.layouts[cache_key] = built
        self.units.setdefault(name, meta.get("unit"))
        return built

    def add_benchmark(self, file_code: int, name: str, row: object, columns: list) -> str | None:
        """Append one benchmark's rows from one file; return a problem description instead."""
        if row is None:
            row = []
        if not isinstance(row, list):
            return f"row is {type(row).__name__}, expected a list"
        cols = dict(zip(columns, row))
        params = cols.get("params") or []
        if not isinstance(params, list) or not all(isinstance(p, list) for p in params):
            return "'params' is not a list of lists"
        lay = self.layout(name, params)
        n = lay.n_combos
        result = cols.get("result")
        if result is None:
            result = [None] * n  # the whole benchmark failed
        elif not isinstance(result, list):
            result = [result]
        if len(result) != n:
            return f"{len(result)} results for {n} parameter combinations"
        per_combo = {}
        for key in (*(f"stats_{k}" for k in STATS_KEYS), "samples"):
            column = cols.get(key)
            if column is None:
                column = [None] * n
            elif not isinstance(column, list) or len(column) != n:
                return f"'{key}' does not have one entry per parameter combination"
            per_combo[key] = column

        self.values.extend(result)
        self.failed.extend([r is None for r in result])
        for k in STATS_KEYS:
            self.stats[k].extend(per_combo[f"stats_{k}"])
        self.samples.extend(per_combo["samples"])
        self.versions.extend([cols.get("version")] * n)
        self.key_codes.extend(lay.key_codes)
        self.file_codes.append(np.full(n, file_code, dtype=np.int32))
        bench_code = self.bench_names.setdefault(name, len(self.bench_names))
        self.bench_codes.append(np.full(n, bench_code, dtype=np.int32))
        for column, values in lay.param_values.items():
            if column not in self.params:
                self.params[column] = [None] * self.n_rows
            self.params[column].extend(values)
        self.n_rows += n
        for column, values in self.params.items():
            if len(values) < self.n_rows:
                values.extend([None] * (self.n_rows - len(values)))
        return None

    def frame(self, files: list[dict]) -> pd.DataFrame:
        file_codes = np.concatenate(self.file_codes) if self.file_codes else np.empty(0, np.int32)
        bench_codes = np.concatenate(self.bench_codes) if self.bench_codes else np.empty(0, np.int32)

        def per_file(key):
            return _categorical_from_codes(file_codes, [f[key] for f in files])

        values = _to_float(self.values)
        failed = np.asarray(self.failed, dtype=bool)
        status = np.where(failed, 2, np.where(np.isnan(values), 1, 0)).astype(np.int8)
        bench_names = list(self.bench_names)
        columns = {
            "machine": per_file("machine"),
            "env_name": per_file("env_name"),
            "commit_hash": per_file("commit_hash"),
            "date": pd.to_datetime(np.asarray([f["date"] for f in files], dtype=np.int64)[file_codes], unit="ms", utc=True),
            "benchmark": _categorical_from_codes(bench_codes, bench_names),
            "params_key": _categorical_from_codes(np.asarray(self.key_codes, dtype=np.int32), list(self.params_keys)),
        }
        columns.update(self.params)
        columns["value"] = values
        columns["status"] = pd.Categorical.from_codes(status, [STATUS_OK, STATUS_SKIPPED, STATUS_FAILED])
        units = [self.units.get(b) for b in bench_names]
        columns["unit"] = _categorical_from_codes(bench_codes, units)
        for k in STATS_KEYS:
            columns[k] = _to_float(self.stats[k])
        columns["samples"] = self.samples
        columns["benchmark_version"] = self.versions
        return pd.DataFrame(columns)


def _product(params: list) -> list[tuple]:
    return list(itertools.product(*params)) if params else [()]


def _to_float(values: list) -> np.ndarray:
    try:
        return np.asarray(values, dtype=float)  # None -> NaN
    except (TypeError, ValueError):
        return np.asarray([v if isinstance(v, (int, float)) else np.nan for v in values], dtype=float)


def _categorical_from_codes(codes: np.ndarray, categories: list) -> pd.Categorical:
    """Categorical built from integer codes (no hashing of a million strings).

    ``categories`` may repeat a label (several commits on one date) or hold None (unknown
    unit): repeated labels are merged and None becomes a missing value.
    """
    unique: dict[str, int] = {}
    remap = np.array([-1 if c is None else unique.setdefault(str(c), len(unique)) for c in categories] or [-1],
                     dtype=np.int32)
    return pd.Categorical.from_codes(remap[codes] if len(codes) else codes, list(unique))


def load_results(results_dir: str | Path, machine: str | None = None) -> LoadedResults:
    """Load every asv result under ``results_dir`` (optionally one machine)."""
    root = Path(results_dir)
    if not root.exists():
        raise ResultsDirError(f"results directory {str(root)!r} does not exist")
    if not root.is_dir():
        raise ResultsDirError(f"results path {str(root)!r} is not a directory")
    report = LoadReport()

    benchmarks: dict = {}
    bench_file = root / "benchmarks.json"
    if bench_file.exists():
        doc, reason = read_json_file(bench_file)
        if reason is None and not isinstance(doc, dict):
            reason = "not an asv benchmarks.json (top level is not an object)"
        if reason is not None:
            report.skipped.append(SkippedFile(str(bench_file), reason + "; parameter names and units unknown"))
        else:
            benchmarks = {k: v for k, v in doc.items() if isinstance(v, dict)}

    machine_dirs = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if machine is not None:
        machine_dirs = [p for p in machine_dirs if p.name == machine]
    machines: dict = {}
    files: list[dict] = []
    for mdir in machine_dirs:
        info_path = mdir / "machine.json"
        if info_path.exists():
            info, reason = read_json_file(info_path)
            if reason is None and isinstance(info, dict):
                machines[mdir.name] = info
            else:
                report.skipped.append(SkippedFile(str(info_path), reason or "not an asv machine.json"))
        for path in sorted(mdir.glob("*.json")):
            if path.name == "machine.json":
                continue
            doc, reason = read_json_file(path)
            if reason is None:
                reason = _check_result_document(doc)
            if reason is not None:
                report.skipped.append(SkippedFile(str(path), reason))
                continue
            files.append({"path": str(path), "doc": doc, "machine": mdir.name, "env_name": str(doc["env_name"]),
                          "commit_hash": str(doc["commit_hash"]), "date": int(doc["date"])})

    # Commit order is the commit date asv stored (ms); ties broken deterministically.
    files.sort(key=lambda f: (f["date"], f["machine"], f["env_name"], f["commit_hash"]))
    builder = _FrameBuilder(benchmarks)
    for code, f in enumerate(files):
        doc = f.pop("doc")
        columns = doc["result_columns"]
        for name, row in doc["results"].items():
            problem = builder.add_benchmark(code, name, row, columns)
            if problem is not None:
                report.problems.append(f"{f['path']}: benchmark {name!r} skipped: {problem}")
        report.loaded_files.append(f["path"])
    frame = builder.frame(files)
    return LoadedResults(frame, report, benchmarks, machines, list(builder.params))


def commit_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Commits of each (machine, env) in date order: machine, env_name, commit_hash, date."""
    cols = ["machine", "env_name", "commit_hash", "date"]
    commits = frame[cols].drop_duplicates(subset=cols[:3])
    return commits.sort_values(["machine", "env_name", "date", "commit_hash"]).reset_index(drop=True)
