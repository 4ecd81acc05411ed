"""The dashboard's data, loaded once per results set and shared by every page (no Dash here).

``ResultsStore(results_dir).get()`` returns a :class:`DashboardData`: the loaded table
(dashboard.table, through the on-disk cache of dashboard.cache when there is a cache dir), one
:class:`Run` per (machine, environment), the ceilings per run, the commit URL and commit order of
the project (dashboard.asvconf) and what could not be loaded. It reloads only when the files under
the results dir change, and it never writes there.

Two modes. This suite's results (benchmarks with ``case`` and ``impl`` parameters that name a
Case) get every page; a Run's rows then carry the Case fields. Any other asv results folder is
"generic": Trends, Compare and Regressions on the raw series (benchmark x parameters), and one
line that says why Overview and Roofline are off.

Static compile metrics (dashboard.static_metrics: registers, spills, shared memory per kernel
config) are never shown beside timings: their series go to ``static_runs`` for the Kernels page
and take no part in the mode. A folder with nothing else is "static": the Overview then shows
the Kernels page, and the timing pages say why they are empty.

Regression detection over every series runs once per results set in a worker process
(dashboard.detection); pages poll for it, and the Trends page runs the same detector on the few
series it shows.
"""

from __future__ import annotations

import concurrent.futures
import gc
import threading
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from dashboard import asvconf, conf_reader, metrics, results_folder, static_metrics
from dashboard.cache import ResultsCache
from dashboard.data import LoadReport, ResultsDirError, SkippedFile
from dashboard.detection import Detector, FindingsState  # noqa: F401 (FindingsState: pages import it here)
from dashboard.table import ResultsTable, RunRows
from dashboard.urlstate import PARAM_PREFIX

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RESULTS_DIR = REPO_ROOT / "results"
MACHINE_IDENTITY_KEYS = ("gpu", "driver", "cuda", "torch", "triton", "cpu", "os")
SUITE, GENERIC, STATIC = "suite", "generic", "static"


@dataclass(eq=False)  # identity: a Run is a cache key
class Run:
    """One (machine, environment): its commits oldest first and the series shown of it."""

    machine: str
    env_name: str
    table: ResultsTable
    index: RunRows
    series: pd.DataFrame  # the shown series of this run (index: series id); suite: + metrics.CASE_COLUMNS
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
        return self.series[list(metrics.CASE_COLUMNS)] if self.suite else None

    @cached_property
    def catalog(self) -> pd.DataFrame:
        """Distinct (case, impl) with Case fields: what the filters count (suite mode)."""
        return metrics.case_catalog(self.series) if self.suite else metrics.empty_catalog()

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


@dataclass
class DashboardData:
    results_dir: Path
    problem: str | None  # why there is nothing to show (missing dir, no result files), else None
    report: LoadReport = field(default_factory=LoadReport)
    mode: str = SUITE
    table: ResultsTable | None = None
    ceilings: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["machine", "env_name",
                                                                                  "commit_hash", "copy_gbps"]))
    ceiling_problems: list = field(default_factory=list)  # metrics.CeilingProblem: stored ceilings left out
    runs: dict[tuple[str, str], Run] = field(default_factory=dict)
    static_runs: dict[tuple[str, str], Run] = field(default_factory=dict)  # static compile metrics only
    machines: dict = field(default_factory=dict)
    benchmarks: dict = field(default_factory=dict)
    project: asvconf.ProjectInfo = field(default_factory=asvconf.ProjectInfo)
    signature: tuple = ()
    cache_note: str = ""
    files_parsed: int = 0  # result files parsed at this load (the rest came from the cache)
    load_seconds: float = 0.0

    @property
    def empty(self) -> bool:
        return self.problem is not None

    def static_run(self, machine: str | None) -> Run | None:
        """The static metrics of a machine (its environment with most commits), else of the
        machine with the longest static history."""
        mine = [r for (m, _), r in self.static_runs.items() if m == machine] or list(self.static_runs.values())
        return max(mine, key=lambda r: (len(r.commits), r.machine == machine, r.machine, r.env_name), default=None)

    @property
    def commit_url(self) -> str | None:
        return self.project.commit_url

    def machine_names(self) -> list[str]:
        return sorted({m for m, _ in self.runs})

    def envs_of(self, machine: str) -> list[str]:
        """Environments of a machine, the one with most commits first."""
        envs = [(e, len(r.commits)) for (m, e), r in self.runs.items() if m == machine]
        return [e for e, _ in sorted(envs, key=lambda x: (-x[1], x[0]))]

    def run(self, machine: str | None, env: str | None) -> Run | None:
        """The run asked for, else the machine's main env, else the first run (bad links degrade)."""
        if (machine, env) in self.runs:
            return self.runs[(machine, env)]
        if machine in self.machine_names():
            return self.runs[(machine, self.envs_of(machine)[0])]
        if self.runs:  # the longest history is the one a person most likely wants
            return max(self.runs.values(), key=lambda r: (len(r.commits), r.machine, r.env_name))
        return None

    def commit_link(self, commit: str) -> str | None:
        return f"{self.commit_url}{commit}" if self.commit_url else None

    def machine_identity(self, machine: str) -> dict[str, str]:
        info = self.machines.get(machine, {})
        return {k: str(info[k]) for k in MACHINE_IDENTITY_KEYS if k in info}

    def rows_frame(self, samples: bool = True) -> pd.DataFrame:
        """Every shown row of every run as one frame (tests and tools; a view never needs it)."""
        frames = [run.frame(np.arange(run.index.rows.start, run.index.rows.stop)[
            run._shown[run.table.series_of_row[run.index.rows]]], samples) for run in self.runs.values()]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def what_was_loaded(self, static: bool = False) -> str:
        """One line: how many series of how many benchmarks, commits and machines (of the static
        compile metrics with ``static``)."""
        runs = self.static_runs if static else self.runs
        shown = pd.concat([r.series for r in runs.values()]) if runs else pd.DataFrame()
        n_series, n_bench = len(shown), shown["benchmark"].nunique() if len(shown) else 0
        commits = len(set().union(*(set(r.commits["commit_hash"]) for r in runs.values())))
        machines = sorted({m for m, _ in runs})
        return (f"{n_series:,} series of {n_bench:,} benchmark{'s' if n_bench != 1 else ''}, {commits:,} "
                f"commit{'s' if commits != 1 else ''} on {len(machines)} machine{'s' if len(machines) != 1 else ''} "
                f"({', '.join(machines[:4])}{', …' if len(machines) > 4 else ''})")


def results_signature(results_dir: Path) -> tuple:
    """Changes when the results do: the result files' names, sizes, mtimes, ctimes and inodes as
    dashboard.results_folder lists them for the loaders, the other JSON files beside them, and
    what cannot be read ("missing" when the folder itself cannot be listed)."""
    try:
        return results_folder.list_results(results_dir, read_machines=False).signature()
    except ResultsDirError:
        return ("missing",)


def _report_of(table: ResultsTable) -> LoadReport:
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


def _ceilings(table: ResultsTable) -> tuple[pd.DataFrame, list]:
    """metrics.ceilings_table over the ceiling benchmarks' rows (a few per commit)."""
    series = table.series
    chosen = series[series["benchmark"].isin([metrics.COPY_BENCHMARK, metrics.MATMUL_BENCHMARK])]
    rows = table.frame(table.rows_of_series(chosen.index), samples=False, stats=())
    for name in ("bytes", "dtype", "n"):
        values = {sid: dict(zip(n, v)).get(name) for sid, n, v in
                  zip(chosen.index, chosen["param_names"], chosen["param_values"])}
        rows[name] = rows["series"].map(values)
    return metrics.ceilings_table(rows)


def build_data(results_dir: str | Path, asv_conf: Path | None = None, cache_dir: Path | None = None) -> DashboardData:
    """Load and index a results dir; never raises for bad input (the problem is reported).

    ``asv_conf``: the project's asv.conf.json (None: the one beside the results, if any).
    ``cache_dir``: where dashboard.cache keeps parsed files (None: parse every time, keep nothing).
    """
    started = time.perf_counter()
    root = Path(results_dir)
    signature = results_signature(root)
    # Reading the asv config (asv import, git rev-list) overlaps the loading of the results.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        project_future = pool.submit(asvconf.read_project, asvconf.find_conf(root, asv_conf))
        try:
            parsed = ResultsCache(root, cache_dir).load()
        except ResultsDirError as exc:
            return DashboardData(root, str(exc), project=project_future.result(), signature=signature)
        project = project_future.result()
    table = ResultsTable(parsed, project.commit_rank)
    ceilings, ceiling_problems = _ceilings(table)
    report = _report_of(table)
    report.problems.extend(p.text() for p in ceiling_problems)
    static = static_metrics.is_static(table.series["benchmark"])
    timed = table.series[~static]
    cases = metrics.case_series(timed)
    mode = SUITE if len(cases) else (GENERIC if len(timed) or not static.any() else STATIC)
    data = DashboardData(root, None, report, mode, table, ceilings, ceiling_problems,
                         machines=parsed.machines, benchmarks=parsed.benchmarks, project=project,
                         signature=signature, cache_note=parsed.cache_note, files_parsed=parsed.parsed)
    if not len(table.series):
        data.problem = (f"no usable asv results in {str(root)!r}" if report.loaded_files or report.skipped
                        else f"no asv result files in {str(root)!r}")
        return data
    shown = timed.join(cases) if len(cases) else timed
    shown = shown[shown["metric"].notna()] if len(cases) else shown
    static_series = table.series[static]
    static_series = static_series.join(static_metrics.series_fields(static_series))
    for key, index in table.runs.items():
        mine = shown[(shown["machine"] == key[0]) & (shown["env_name"] == key[1])]
        if len(mine):
            data.runs[key] = Run(*key, table, index, mine, suite=data.mode == SUITE)
        mine = static_series[(static_series["machine"] == key[0]) & (static_series["env_name"] == key[1])]
        if len(mine):
            data.static_runs[key] = Run(*key, table, index, mine, suite=False)
    for run in [*data.runs.values(), *data.static_runs.values()]:  # index now, so no callback pays for it
        run.warm()
    metrics.ceilings_by_run(data.ceilings)
    data.load_seconds = time.perf_counter() - started
    return data


def _settle_garbage_collector(first: bool) -> None:
    """After a load, freeze what is alive (the libraries, the loaded data) out of the cyclic
    collector's reach: a full collection over it costs ~0.2 s, and it otherwise falls on whichever
    callback happens to trigger it. On a reload the previous load's objects are unfrozen and
    collected first, so their cycles are not kept."""
    if not first:
        gc.unfreeze()
        gc.collect()
    gc.freeze()


class ResultsStore:
    """Holds the current DashboardData of one results dir; reloads when the files change."""

    RECHECK_SECONDS = 2.0  # at most one directory scan per interval, to keep callbacks cheap

    def __init__(self, results_dir: str | Path, asv_conf: Path | None = None, detect_in_background: bool = True,
                 cache_dir: Path | None = None):
        self.results_dir = Path(results_dir)
        self.asv_conf = asv_conf
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._lock = threading.Lock()
        self._data: DashboardData | None = None
        self._checked = 0.0
        self._detector = Detector(detect_in_background)

    def get(self) -> DashboardData:
        if self._data is None or time.monotonic() - self._checked > self.RECHECK_SECONDS:
            self._read_conf_unlocked()
        with self._lock:
            now = time.monotonic()
            if self._data is None or (now - self._checked > self.RECHECK_SECONDS
                                      and results_signature(self.results_dir) != self._data.signature):
                first = self._data is None
                self._data = None
                self._data = build_data(self.results_dir, self.asv_conf, self.cache_dir)
                _settle_garbage_collector(first)
            self._checked = now
            return self._data

    def _read_conf_unlocked(self) -> None:
        """Parse the asv config (if it changed) before the lock is taken, so no request waits on
        it while another holds the store; the reload under the lock then finds it parsed."""
        conf = asvconf.find_conf(self.results_dir, self.asv_conf)
        if conf is not None:
            conf_reader.load_conf(conf)

    def findings(self) -> FindingsState:
        """The detector's findings for the current results set (started on first call)."""
        data = self.get()
        return self._detector.state(data.signature, self.results_dir, self.cache_dir, data.empty,
                                    data.project.commit_rank)

    def close(self) -> None:
        """Stop the detector's worker (tests, app shutdown)."""
        self._detector.close()
