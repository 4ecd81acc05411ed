"""One (machine, environment) of a loaded results table: its commits in order, the series the
dashboard shows of it, and the rows a view asks for (at a commit, of a case, of some series)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from dashboard.data import case_fields, facet_filters, metrics
from asv_results.table import ResultsTable, RunRows
from dashboard.data.urlstate import PARAM_PREFIX


@dataclass(eq=False)  # identity: a Run is a cache key
class Run:
    """One (machine, environment): its commits oldest first and the series shown of it."""

    machine: str
    env_name: str
    table: ResultsTable
    index: RunRows
    series: pd.DataFrame  # the shown series of this run (index: series id); suite: + case_fields.CASE_COLUMNS
    suite: bool = True

    @property
    def commits(self) -> pd.DataFrame:  # commit_hash, date, position
        return self.index.commits

    @cached_property
    def _position_of(self) -> dict[str, int]:
        return {h: i for i, h in enumerate(self.commits["commit_hash"])}

    @cached_property
    def _shown(self) -> np.ndarray:
        mask = np.zeros(len(self.table.series), dtype=bool)
        mask[self.series.index.to_numpy()] = True
        return mask

    @cached_property
    def _case_columns(self) -> pd.DataFrame | None:
        return self.series[list(case_fields.CASE_COLUMNS)] if self.suite else None

    @cached_property
    def catalog(self) -> pd.DataFrame:
        """Distinct (case, impl) with Case fields: what the filters count (suite mode)."""
        return facet_filters.case_catalog(self.series) if self.suite else facet_filters.empty_catalog()

    def _series_of_case(self, case: str | None, metric: str | None = None, mode: str | None = None) -> pd.Index:
        if not self.suite or case is None:
            return self.series.index[:0]
        mine = self.series["case"].to_numpy() == case
        if metric is not None:
            mine &= self.series["metric"].to_numpy() == metric
        if mode is not None:
            mine &= self.series["mode"].to_numpy() == mode
        return self.series.index[mine]

    def modes_of_case(self, case: str | None) -> list[str]:
        """The modes a case was measured in, forward first."""
        if not self.suite or case is None:
            return []
        return sorted(set(self.series.loc[self._series_of_case(case), "mode"].astype(str)), key=metrics.mode_order)

    @cached_property
    def series_of_params(self) -> dict[tuple[str, str], tuple[str | None, str | None]]:
        """(benchmark, params_key) -> (case, impl): how a detector finding maps back to a Case
        (suite mode; another project's series have no case). Its mode: :attr:`mode_of_params`."""
        if not self.suite:
            return {}
        return {(str(b), str(p)): (str(c), str(i)) for b, p, c, i in
                self.series[["benchmark", "params_key", "case", "impl"]].itertuples(index=False)}

    @cached_property
    def mode_of_params(self) -> dict[tuple[str, str], str]:
        """(benchmark, params_key) -> mode (forward, backward, full) of a Case series."""
        if not self.suite:
            return {}
        return {(str(b), str(p)): str(m) for b, p, m in
                self.series[["benchmark", "params_key", "mode"]].itertuples(index=False)}

    def trend_query(self, benchmark: str, params_key: str) -> dict:
        """The Trends URL keys that show one series (a detector finding's): its case, metric and mode
        here, its benchmark and parameter values in generic mode."""
        mine = self.series[(self.series["benchmark"] == benchmark) & (self.series["params_key"] == params_key)]
        if mine.empty:
            return {}
        row = mine.iloc[0]
        if self.suite:
            return {"case": row["case"], "metric": row["metric"], "mode": row["mode"]}
        params = {PARAM_PREFIX + n: [r] for n, r in zip(row["param_names"], row["param_reprs"])}
        return {"benchmark": benchmark, **params}

    def warm(self) -> None:
        """Build the cached indexes (part of loading, not of the first callback)."""
        self.catalog, self._shown, self._position_of  # noqa: B018 (cached_property side effect)

    def frame(self, rows: np.ndarray, samples: bool = True) -> pd.DataFrame:
        """These table rows with every column a view reads (and ``samples`` as asv's lists)."""
        return self.table.frame(rows, self._case_columns, samples=samples)

    def at_commit(self, commit: str | None, samples: bool = True) -> pd.DataFrame:
        """The rows measured at one commit."""
        position = self._position_of.get(commit)
        if position is None:
            return self.frame(np.empty(0, np.int64), samples)
        window = self.index.rows_at(position)
        rows = np.arange(window.start, window.stop, dtype=np.int64)
        return self.frame(rows[self._shown[self.table.series_of_row[rows]]], samples)

    @cached_property
    def measured_points(self) -> pd.Series:
        """How many commits measured each series of this run (status ok), by series id."""
        window = self.index.rows
        rows = np.arange(window.start, window.stop, dtype=np.int64)
        ok = rows[self.table.status[rows] == 0]
        counts = np.bincount(self.table.series_of_row[ok], minlength=int(self.series.index.max()) + 1
                             if len(self.series) else 0)
        return pd.Series(counts[self.series.index.to_numpy()], index=self.series.index)

    def of_series(self, series_ids, samples: bool = True) -> pd.DataFrame:
        """Every row (all commits) of these series of this run."""
        rows = self.table.rows_of_series(series_ids)
        window = self.index.rows
        return self.frame(rows[(rows >= window.start) & (rows < window.stop)], samples)

    def of_case(self, case: str | None, samples: bool = True, metric: str | None = None,
                mode: str | None = None) -> pd.DataFrame:
        """Every row of one case (all commits and impls; all metrics and modes, or only ``metric``
        and ``mode``)."""
        return self.of_series(self._series_of_case(case, metric, mode), samples)

    def previous_commit(self, commit: str) -> str | None:
        i = self._position_of.get(commit, -1)
        return self.commits["commit_hash"].iloc[i - 1] if i > 0 else None
