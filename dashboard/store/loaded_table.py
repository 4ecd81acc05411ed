"""The results table the pages and the regression detector both read: every result file of a
folder (through asv_results.cache when there is a cache dir) and the series the dashboard shows of
it. It sits below dashboard.store.model and dashboard.store.detection so that neither imports the other."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dashboard.data import case_fields, static_metrics
from asv_results.cache import ResultsCache
from asv_results.table import ResultsTable


def load_table(results_dir: Path, cache_dir: Path | None, commit_rank: dict | None = None) -> ResultsTable:
    """Every result file of ``results_dir`` as a ResultsTable (through the cache when given)."""
    return ResultsTable(ResultsCache(results_dir, cache_dir).load(), commit_rank)


def shown_series(table: ResultsTable) -> pd.Index:
    """The series the dashboard looks at (and the detector scans): this suite's Case series and
    the static compile metrics when there are Case series, else all."""
    cases = case_fields.case_series(table.series)
    if not len(cases):
        return table.series.index
    static = table.series.index[static_metrics.is_static(table.series["benchmark"])]
    return cases.index.union(static)
