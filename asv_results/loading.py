"""The one loader: an asv results folder through the cache (asv_results.cache) into the table
(asv_results.table), for the dashboard's server, the gate, the bisect and the tools alike.

    table = load_table(results, cache_dir)              # the server: compact, columns on disk
    loaded = load_results(results, machine="h200")      # the gate: one pandas row per value

``load_results`` is the table's rows as one tidy frame, one row per (machine, env_name,
commit_hash, benchmark, parameter combination): the fixed columns (asv_results.data.FIXED_COLUMNS,
the ``order`` of each commit in its run), then one column per benchmark parameter. Rows go run by
run (machines, then environments, by name), commits in the commit order (asv_results.commit_order:
the repository's where ``commit_rank`` gives it, else the stored dates), benchmarks in file order.
With a cache dir a second load parses only what changed, so the gate run beside a dashboard reads
the files the server already parsed, never the whole folder again.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from asv_results.cache import ResultsCache
from asv_results.data import FIXED_COLUMNS, LoadedResults, LoadReport, SkippedFile
from asv_results.result_file import STATS_KEYS
from asv_results.table import ResultsTable


def load_table(results_dir: str | Path, cache_dir: str | Path | None = None, commit_rank: dict | None = None,
               machine: str | None = None, jobs: int | None = None, progress=None) -> ResultsTable:
    """Every result file of ``results_dir`` (of one ``machine``'s folder when given) as a
    ResultsTable, through the cache at ``cache_dir`` (None: parse everything, keep nothing).
    ``jobs``: processes that parse (None: every core when there is enough to parse);
    ``progress``: told of the parse as it goes (asv_results.parse_progress). Raises
    asv_results.data.ResultsDirError when the folder itself cannot be used."""
    cache = ResultsCache(results_dir, cache_dir, jobs=jobs, machine=machine, progress=progress)
    return ResultsTable(cache.load(), commit_rank)


def load_report(table: ResultsTable) -> LoadReport:
    """What was read, what was skipped (whole files, benchmarks.json, machine folders) and what
    was partial (a benchmark left out of a file, a second file of one commit)."""
    parsed = table.parsed
    report = LoadReport(skipped=list(parsed.skipped))
    for e in parsed.files:
        path = str(parsed.root / e.path)
        if e.reason is not None:
            report.skipped.append(SkippedFile(path, e.reason))
            continue
        report.loaded_files.append(path)
        report.problems += [f"{path}: benchmark {name!r} skipped: {why}" for name, why in e.problems]
    report.problems += table.duplicate_notes
    return report


def param_columns(series: pd.DataFrame) -> pd.DataFrame:
    """One column per benchmark parameter name (``param_<name>`` where a name is also a fixed
    column), indexed by series id: each series' parsed value, None where it has no such parameter."""
    columns: dict[str, dict[int, object]] = {}
    for sid, names, values in zip(series.index, series["param_names"], series["param_values"]):
        for name, value in zip(names, values):
            column = f"param_{name}" if name in FIXED_COLUMNS else name
            columns.setdefault(column, {})[sid] = value
    return pd.DataFrame({c: pd.Series(v, dtype=object) for c, v in columns.items()}, index=series.index)


def load_results(results_dir: str | Path, machine: str | None = None, *, cache_dir: str | Path | None = None,
                 commit_rank: dict | None = None, jobs: int | None = None, progress=None, samples: bool = True,
                 stats: tuple[str, ...] = STATS_KEYS, params: bool = True, rows=None) -> LoadedResults:
    """Every asv result under ``results_dir`` (optionally one machine) as one frame with each
    row's samples (a list, or None where asv stored none), asv's ``stats`` and, with ``params``,
    one column per parameter; the other arguments as load_table's. ``samples=False``: the frame
    has a ``row`` column instead and ``samples_of(rows)`` gives the lists of the rows asked for,
    and its text columns are Categoricals: the lean frame the gate judges at tens of millions of
    rows. ``rows(table)``: the table rows to keep (the gate's window), chosen before the frame is built."""
    table = load_table(results_dir, cache_dir, commit_rank, machine, jobs, progress)
    return results_of(table, None if rows is None else rows(table), samples=samples, stats=stats, params=params)


def results_of(table: ResultsTable, rows: np.ndarray | None = None, *, samples: bool = True,
               stats: tuple[str, ...] = STATS_KEYS, params: bool = True) -> LoadedResults:
    """load_results' frame of a table already loaded, of only ``rows`` (table row numbers in
    table order; None: every row). The gate picks the rows of the commits it judges here, before
    any frame is built: a frame of every row of 50 M points does not fit its memory."""
    columns = param_columns(table.series) if params else None
    rows = np.arange(table.n_rows, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    frame = table.frame(rows, series_columns=columns, samples=samples, stats=stats, categorical=not samples)
    frame = frame.drop(columns=["series", "row"] if samples else ["series"])
    if columns is not None:
        frame[list(columns.columns)] = frame[list(columns.columns)].infer_objects()  # ints stay ints, as asv wrote them
    return LoadedResults(frame, load_report(table), table.parsed.benchmarks, table.parsed.machines,
                         [] if columns is None else list(columns.columns), None if samples else table.samples)
