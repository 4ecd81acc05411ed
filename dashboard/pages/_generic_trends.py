"""Trends for another project's asv results (generic mode): pick a benchmark and its parameter
values; one line per matching parameter combination, in the benchmark's own unit, with asv's 99 %
CI band, the detector's change markers (its worker's findings; pending while it runs, as on the
suite's Trends: _pending_marks) and the failed / skipped markers.

A benchmark whose unit asv did not record (a ``track_`` without ``unit``: asv's placeholder
"unit") may return GB for one parameter value, seconds for another and a count for a third: it
opens on one combination, and combinations picked beside it get an axis each.

Controls live under their own page id (``series``) so they never meet the suite's Trends
controls; their URL keys are machine, env, benchmark, ``p_<parameter>`` (asv's repr() of each
value), x, logy and commit.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from dash import ALL, Input, Output, State, html

from asv_results import commit_messages
from dashboard.ui.callback_guards import error_figure, guarded
from dashboard.ui.commit_choice import commit_options, resolve_commit
from dashboard.ui.notices import message
from dashboard.ui.run_selector import register_run_controls, run_controls, run_of, trend_view_controls
from dashboard.ui.widgets import dropdown, graph, labelled, named_values
from dashboard.figures import build_trend_figure
from dashboard.data.metrics import better_of
from dashboard.data.dashboard_data import DashboardData
from dashboard.store.model import ResultsStore
from dashboard.data.run_view import Run
from dashboard.data.na_reasons import reason_column
from dashboard.pages._commit_info import commit_info
from dashboard.pages._pending_marks import (marks_pending, marks_poll, marks_ready_input, pending_note,
                                            poll_disabled, poll_output, register_marks_poll, worker_done,
                                            workers_changes)
from dashboard.data.run_marks import marks_of_run
from asv_results.units import symbol_of
from dashboard.data.urlstate import PARAM_PREFIX, QUERY_TYPE, SHELL, Query, qid

ID = "series"
MAX_LINES = 12  # beyond this a plot is a tangle: narrow the parameters
MAX_PANELS = 6  # lines of a benchmark without a unit, one axis each: beyond this the panels are slivers


@dataclass(frozen=True)
class Measure:
    """What build_trend_figure needs to know about a benchmark's values."""

    label: str
    unit: str | None
    better: str


def benchmarks_of(run: Run | None) -> list[str]:
    return sorted(run.series["benchmark"].unique()) if run is not None else []


def benchmark_options(run: Run | None) -> list[dict]:
    if run is None:
        return []
    counts = run.series.groupby("benchmark").size()
    return [{"label": f"{b} ({n} combination{'s' if n != 1 else ''})" if n > 1 else b, "value": b}
            for b, n in counts.sort_index().items()]


def param_grid(run: Run | None, benchmark: str | None) -> list[tuple[str, list[str]]]:
    """(parameter name, its values as asv stores them, in order of appearance) of a benchmark."""
    if run is None or benchmark is None:
        return []
    mine = run.series[run.series["benchmark"] == benchmark]
    if mine.empty:
        return []
    names = mine["param_names"].iloc[0]
    return [(n, list(dict.fromkeys(r[i] for r in mine["param_reprs"]))) for i, n in enumerate(names)]


def unit_of(run: Run | None, benchmark: str | None) -> str | None:
    """The benchmark's unit as asv stored it (None when it has no series here)."""
    if run is None or benchmark is None:
        return None
    units = run.series.loc[run.series["benchmark"] == benchmark, "unit"]
    return units.iloc[0] if len(units) and isinstance(units.iloc[0], str) else None


def has_unit(unit: str | None) -> bool:
    """False for asv's placeholder "unit" (and no unit): then nothing says two values share one."""
    return isinstance(unit, str) and bool(symbol_of(unit))


def default_choice(grid: list[tuple[str, list[str]]], unit_known: bool = True) -> dict[str, list[str]]:
    """All combinations when they fit in MAX_LINES, else the first value of every parameter but
    the first (whose values then make the lines, as many as fit). Without a unit, one
    combination: the first value of every parameter."""
    if not unit_known:
        return {name: values[:1] for name, values in grid}
    total = 1
    for _, values in grid:
        total *= len(values)
    if total <= MAX_LINES:
        return {name: [] for name, _ in grid}
    return {name: [] if i == 0 else values[:1] for i, (name, values) in enumerate(grid)}


def param_controls(grid, chosen: dict[str, list[str]]) -> list:
    return [labelled(name, dropdown(ID, PARAM_PREFIX + name, [{"label": v, "value": v} for v in values],
                                    chosen.get(name) or [], multi=True, placeholder="all"),
                     "16rem" if max(map(len, values)) < 20 else "24rem")
            for name, values in grid]


def best_measured(run: Run | None, names: list[str]) -> tuple[str | None, tuple]:
    """The benchmark and parameter reprs of the series measured at the most commits (the first
    such in name order): where Trends opens, not on a series measured at 3 commits of 76."""
    if run is None or not names:
        return (names[0] if names else None), ()
    counts = run.measured_points
    mine = run.series.assign(points=counts).loc[run.series["benchmark"].isin(names)]
    if mine.empty or not mine["points"].max():
        return names[0], ()
    best = mine.sort_values(["points", "benchmark"], ascending=[False, True], kind="stable").iloc[0]
    return str(best["benchmark"]), tuple(best["param_reprs"])


def layout(data: DashboardData, query: Query):
    run = run_of(data, query)
    names = benchmarks_of(run)
    opening, reprs = best_measured(run, names)
    benchmark = query.one("benchmark", opening, allowed=names)
    grid = param_grid(run, benchmark)
    linked = any(PARAM_PREFIX + n in query.raw for n, _ in grid)
    chosen = {n: query.many(PARAM_PREFIX + n, allowed=values) for n, values in grid} if linked else \
        default_choice(grid, has_unit(unit_of(run, benchmark)))
    if not linked and benchmark == opening and reprs:  # one value per parameter: the best-measured series' own
        chosen = {n: ([reprs[i]] if v else v) for i, (n, v) in enumerate(chosen.items())}
    return html.Div([
        html.H1("Trends"),
        html.P(["Generic asv results: ", data.what_was_loaded(), "; ", data.project.order_note(), ". Pick a "
                "benchmark and its parameters; each combination is a line."], className="hint", id="generic-line"),
        html.Div(run_controls(ID, data, query), className="controls"),
        html.Div([labelled("Benchmark", dropdown(ID, "benchmark", benchmark_options(run), benchmark,
                                                 clearable=False), "40rem")], className="controls"),
        html.Div(param_controls(grid, chosen), className="controls", id="series-params"),
        html.Div([
            *trend_view_controls(ID, query, run),
        ], className="controls"),
        html.Div(id="series-lines-note", className="hint"),
        graph(ID, "figure"),
        *marks_poll(ID),  # on while the figure's marks are pending
        html.Div(id="series-commit-info", className="card"),
    ])


def chosen_series(run: Run, benchmark: str | None, chosen: dict[str, list[str]]) -> pd.DataFrame:
    """The series of ``benchmark`` whose parameter values are among the chosen ones (none = all)."""
    mine = run.series[run.series["benchmark"] == benchmark]
    if mine.empty:
        return mine
    names = mine["param_names"].iloc[0]
    keep = pd.Series(True, index=mine.index)
    for i, name in enumerate(names):
        if chosen.get(name):
            keep &= mine["param_reprs"].map(lambda r, i=i, name=name: r[i] in chosen[name])
    return mine[keep]


def line_labels(series: pd.DataFrame) -> pd.Series:
    """Each series' legend label: the parameters that differ between the lines shown (the benchmark's
    last name part when it has none)."""
    if series.empty:
        return pd.Series(dtype=object)
    names = series["param_names"].iloc[0]
    varying = [i for i in range(len(names)) if series["param_reprs"].map(lambda r, i=i: r[i]).nunique() > 1]
    shown = varying or list(range(len(names)))
    if not shown:
        return pd.Series(str(series["benchmark"].iloc[0]).rsplit(".", 1)[-1], index=series.index)
    return series["param_reprs"].map(lambda r: ", ".join(f"{names[i]}={r[i]}" for i in shown))


def measure_of(data: DashboardData, benchmark: str, unit) -> Measure:
    meta = data.benchmarks.get(benchmark) if isinstance(data.benchmarks.get(benchmark), dict) else None
    return Measure(benchmark.rsplit(".", 1)[-1], unit if isinstance(unit, str) else None,
                   better_of(benchmark, unit if isinstance(unit, str) else None, meta))


def _series_changes(data: DashboardData, run: Run, series: pd.DataFrame, detected=None) -> pd.DataFrame:
    """The detector's changes in the series in view (rows of run.series), kept on the load
    (data.findings_in_view): the worker's findings once it is done (``detected``, the store's
    FindingsState), else (no worker: tests, tools; or it failed) the detector on these series now."""
    done = worker_done(detected)
    series_ids = tuple(int(i) for i in series.index)

    def find() -> pd.DataFrame:
        from regressions import find_changes, findings_frame  # imports scipy: on first use

        if done:
            wanted = set(zip(series["benchmark"].astype(str), series["params_key"].astype(str)))
            found = findings_frame(workers_changes(detected, run, wanted))
        else:
            found = findings_frame(find_changes(run.of_series(series_ids, samples=False),  # samples: of the rows used
                                                benchmarks_meta=run.table.parsed.benchmarks,
                                                samples_of=run.table.samples))
        if found.empty:
            return pd.DataFrame(columns=["params", "commit_hash", "direction", "relative_change", "confirmed"])
        return found

    return data.findings_in_view.get(("generic trends", run.machine, run.env_name, series_ids, done), find)


def update(data: DashboardData, machine, env, benchmark, chosen: dict[str, list[str]], x_axis, logy, commit,
           theme="light", detected=None):
    """(figure, note on the lines shown) for one benchmark and its chosen parameter values;
    ``detected``: the store's FindingsState (its findings mark the changes once it is done)."""
    run = data.run(machine, env)
    if run is None or not benchmark:
        return error_figure(lambda: theme)("Pick a benchmark."), ""
    series = chosen_series(run, benchmark, chosen)
    if series.empty:
        return error_figure(lambda: theme)(f"{benchmark}: no parameter combination matches."), ""
    unit = series["unit"].iloc[0]
    apart = not has_unit(unit) and len(series) > 1  # nothing says these share a unit: an axis each
    limit = MAX_PANELS if apart else MAX_LINES
    note = ""
    if len(series) > limit:
        note = (f"Showing {limit} of {len(series)} parameter combinations; pick parameter values to see "
                "the others. ")
        series = series.iloc[:limit]
    if apart:
        note += (f"asv recorded no unit for {benchmark}, so its combinations may measure different things "
                 "(GB, seconds, counts): each has its own axis.")
    labels = line_labels(series)
    rows = run.of_series(series.index)
    rows = rows.merge(run.commits[["commit_hash", "position"]], on="commit_hash", how="left")
    rows["line"] = rows["series"].map(labels)
    rows["y"], rows["y_lo"], rows["y_hi"] = rows["value"], rows["ci_99_a"], rows["ci_99_b"]
    rows["reason"] = reason_column(rows, run.series, data.results_dir, run.machine)  # why n/a, if recorded
    subjects = commit_messages.subjects(data.project.repo, data.project.commit_rank)
    if subjects:  # what each commit says it did, in the hover
        rows["subject"] = rows["commit_hash"].astype(str).map(subjects)
    pending = marks_pending(detected)
    changes = None if pending else _series_changes(data, run, series, detected)
    if changes is not None and len(changes):
        by_params = dict(zip(series["params_key"], labels))
        changes = changes.assign(line=changes["params"].map(by_params)).dropna(subset=["line"])
    measure = measure_of(data, benchmark, unit)
    marked = resolve_commit(run, commit) if commit else None
    figure = build_trend_figure(rows, measure, changes, marked, x_axis or "commit", "log" in (logy or []), theme,
                                title=f"{benchmark} — {run.machine}" + (pending_note(detected) if pending else ""),
                                axis_per_line=apart,
                                run_marks=marks_of_run(data, run))
    return figure, note


def register(app, store: ResultsStore):
    register_run_controls(app, store, ID)
    params = {"type": QUERY_TYPE, "page": ID, "key": ALL}

    @app.callback(Output(qid(ID, "benchmark"), "options"), Output(qid(ID, "benchmark"), "value"),
                  Output(qid(ID, "commit"), "options"),
                  Input(qid(ID, "machine"), "value"), Input(qid(ID, "env"), "value"),
                  State(qid(ID, "benchmark"), "value"), prevent_initial_call=True)
    @guarded(lambda t: [], lambda t: None, lambda t: [])
    def _benchmarks(machine, env, current):
        run = store.get().run(machine, env)
        names = benchmarks_of(run)
        return benchmark_options(run), current if current in names else (names[0] if names else None), \
            commit_options(run)

    @app.callback(Output("series-params", "children"), Input(qid(ID, "benchmark"), "value"),
                  State(qid(ID, "machine"), "value"), State(qid(ID, "env"), "value"), prevent_initial_call=True)
    @guarded(message)
    def _params(benchmark, machine, env):
        run = store.get().run(machine, env)
        grid = param_grid(run, benchmark)
        return param_controls(grid, default_choice(grid, has_unit(unit_of(run, benchmark))))

    register_marks_poll(app, store, ID)

    @app.callback(Output(f"{ID}-figure", "figure"), Output("series-lines-note", "children"), poll_output(ID),
                  inputs=dict(values=Input(params, "value"), theme=Input(qid(SHELL, "theme"), "value"),
                              marks_ready=marks_ready_input(ID)),
                  state=dict(ids=State(params, "id")))
    @guarded(error_figure(), lambda t: "", lambda t: True)
    def _figure(values, theme, marks_ready, ids):  # marks_ready: only when to draw again
        chosen = {i["key"]: v for i, v in zip(ids, values)}
        picked = {k.removeprefix(PARAM_PREFIX): v for k, v in chosen.items() if k.startswith(PARAM_PREFIX)}
        detected = store.findings_in_background()
        figure, note = update(store.get(), machine=chosen.get("machine"), env=chosen.get("env"),
                              benchmark=chosen.get("benchmark"), chosen=picked, x_axis=chosen.get("x"),
                              logy=chosen.get("logy"), commit=chosen.get("commit"), theme=theme, detected=detected)
        return figure, note, poll_disabled(detected)

    @app.callback(Output("series-commit-info", "children"),
                  inputs=dict(named_values(ID, ("machine", "env")), click=Input(f"{ID}-figure", "clickData"),
                              marked=Input(qid(ID, "commit"), "value"), theme=Input(qid(SHELL, "theme"), "value")))
    @guarded(message)
    def _commit_info(**named):  # commit_info's parameters by name
        return commit_info(store.get(), **named)
