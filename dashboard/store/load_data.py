"""Load and index a results folder into a DashboardData (never raising for bad input: the
problem is reported), and the signature that tells when the folder changed.

Static compile metrics (dashboard.data.static_metrics: registers, spills, shared memory per kernel
config) are never shown beside timings: their series go to ``static_runs`` for the Kernels page
and take no part in the mode.
"""

from __future__ import annotations

import concurrent.futures
import time
from pathlib import Path

import pandas as pd

from dashboard.data import case_fields, device_ceilings, static_metrics

from asv_results import asvconf, results_folder
from asv_results.cache import ResultsCache
from asv_results.parse_progress import ConsoleProgress
from dashboard.data.dashboard_data import GENERIC, STATIC, SUITE, DashboardData
from asv_results.data import ResultsDirError
from asv_results.loading import load_report
from dashboard.data.run_view import Run
from asv_results.table import ResultsTable


def shown_series(table: ResultsTable) -> pd.Index:
    """The series the dashboard looks at (and the detector scans): this suite's Case series and
    the static compile metrics when there are Case series, else all."""
    cases = case_fields.case_series(table.series)
    if not len(cases):
        return table.series.index
    static = table.series.index[static_metrics.is_static(table.series["benchmark"])]
    return cases.index.union(static)


def results_signature(results_dir: Path) -> tuple:
    """Changes when the results do: the result files' names, sizes, mtimes, ctimes and inodes as
    asv_results.results_folder lists them for the loaders, the other JSON files beside them, and
    what cannot be read ("missing" when the folder itself cannot be listed)."""
    try:
        return results_folder.list_results(results_dir, read_machines=False).signature()
    except ResultsDirError:
        return ("missing",)


def _ceilings(table: ResultsTable) -> tuple[pd.DataFrame, list]:
    """device_ceilings.ceilings_table over the ceiling benchmarks' rows (a few per commit)."""
    series = table.series
    chosen = series[series["benchmark"].isin([device_ceilings.COPY_BENCHMARK, device_ceilings.MATMUL_BENCHMARK])]
    rows = table.frame(table.rows_of_series(chosen.index), samples=False, stats=())
    for name in ("bytes", "dtype", "n"):
        values = {sid: dict(zip(n, v)).get(name) for sid, n, v in
                  zip(chosen.index, chosen["param_names"], chosen["param_values"])}
        rows[name] = rows["series"].map(values)
    return device_ceilings.ceilings_table(rows)


def build_data(results_dir: str | Path, asv_conf: Path | None = None, cache_dir: Path | None = None) -> DashboardData:
    """Load and index a results dir; never raises for bad input (the problem is reported).

    ``asv_conf``: the project's asv.conf.json (None: the one beside the results, if any).
    ``cache_dir``: where asv_results.cache keeps parsed files (None: parse every time, keep nothing).
    """
    started = time.perf_counter()
    root = Path(results_dir)
    signature = results_signature(root)
    # Reading the asv config (asv import, git rev-list) overlaps the loading of the results.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        project_future = pool.submit(asvconf.read_project, asvconf.find_conf(root, asv_conf))
        try:
            parsed = ResultsCache(root, cache_dir, progress=ConsoleProgress()).load()  # a first parse says how far
        except ResultsDirError as exc:
            return DashboardData(root, str(exc), project=project_future.result(), signature=signature)
        project = project_future.result()
    table = ResultsTable(parsed, project.commit_rank)
    ceilings, ceiling_problems = _ceilings(table)
    report = load_report(table)
    report.problems.extend(p.text() for p in ceiling_problems)
    static = static_metrics.is_static(table.series["benchmark"])
    timed = table.series[~static]
    cases = case_fields.case_series(timed)
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
    device_ceilings.ceilings_by_run(data.ceilings)
    data.load_seconds = time.perf_counter() - started
    return data
