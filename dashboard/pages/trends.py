"""Trends: one metric of one case in one mode (forward, backward, full) against commits in order,
every implementation overlaid, asv's 99 % CI as a band, markers where the regression detector
found a change, hover with the commit hash and date, and a link to the commit (click a point).

The change markers are the detector worker's findings. While the worker runs (minutes after new
results land at 5,000 commits x 10,000 series), the figure says the marks are pending and a poll
redraws it once the worker is done: the page never waits on a detection of its own then."""

from __future__ import annotations

import pandas as pd
from dash import Input, Output, State, html

from dashboard.data import derived_metrics, facet_filters, metrics, speedup_tables

from asv_results import commit_messages
from dashboard.ui.callback_guards import error_figure, guarded
from dashboard.ui.commit_choice import commit_options, resolve_commit
from dashboard.ui.facet_widgets import facet_controls, register_facet_counts
from dashboard.ui.notices import message
from dashboard.ui.run_selector import register_run_controls, run_controls, run_of, trend_view_controls
from dashboard.ui.widgets import dropdown, graph, labelled, named_values
from dashboard.figures import build_trend_figure
from dashboard.figures.trend import date_texts
from dashboard.data.dashboard_data import GENERIC, SUITE, DashboardData
from dashboard.store.model import ResultsStore
from dashboard.data.run_view import Run
from dashboard.data.na_reasons import reason_column
from dashboard.data.run_marks import marks_of_run
from dashboard.pages import Page, _generic_trends
from dashboard.pages._commit_info import commit_info
from dashboard.pages._pending_marks import (marks_pending, marks_poll, marks_ready_input, pending_note,
                                            poll_disabled, poll_output, register_marks_poll, worker_done,
                                            workers_changes)
from dashboard.data.urlstate import SHELL, Query, qid

ID = "trends"
CASE_FACETS = ("op", "dtype", "activation", "shape")
FACETS = tuple(f for f in metrics.FACETS if f != "mode")  # one mode at a time: its own control
# The stored and derived metrics, and fused's speedup over the best unfused / best fused peer
TREND_METRICS = {**metrics.METRICS, speedup_tables.SPEEDUP.name: speedup_tables.SPEEDUP}


def mode_choice(run: Run | None, case: str | None, wanted) -> tuple[list[str], str | None]:
    """The case's modes and the one to show: the wanted one (a list from another page: its first
    that the case has), else forward, else the first."""
    modes = run.modes_of_case(case) if run is not None else []
    wanted = [wanted] if isinstance(wanted, str) else list(wanted or [])
    chosen = next((m for m in wanted if m in modes), None)
    return modes, chosen or (metrics.FORWARD if metrics.FORWARD in modes else (modes[0] if modes else None))


def case_choices(run: Run | None, selections: dict) -> list[str]:
    if run is None:
        return []
    catalog = facet_filters.apply_filters(run.catalog, selections)
    return facet_filters.sort_values_naturally(catalog["case"].unique())


def layout(data: DashboardData, query: Query):
    run = run_of(data, query)
    selections = {f: query.many(f) for f in CASE_FACETS}
    cases = case_choices(run, selections)
    case = query.one("case", cases[0] if cases else None, allowed=cases)
    metric = query.one("metric", "latency", allowed=TREND_METRICS)
    modes, mode = mode_choice(run, case, query.many("mode"))
    return html.Div([
        html.H1("Trends"),
        html.Div(run_controls(ID, data, query), className="controls"),
        html.Div(facet_controls(ID, run, query, FACETS), className="controls"),
        html.Div([
            labelled("Case", dropdown(ID, "case", cases, case, clearable=False), "34rem"),
            labelled("Mode", dropdown(ID, "mode", modes, mode, clearable=False), "9rem"),
            labelled("Metric", dropdown(ID, "metric", [{"label": m.label + (f" ({m.unit})" if m.unit else ""),
                                                         "value": m.name} for m in TREND_METRICS.values()],
                                        metric, clearable=False), "15rem"),
            *trend_view_controls(ID, query, run),
        ], className="controls"),
        graph(ID, "figure"),
        *marks_poll(ID),  # on while the figure's marks are pending
        html.Div(id="trends-commit-info", className="card"),
    ])


def _series_changes(data: DashboardData, run: Run, case: str, source: str, rows: pd.DataFrame | None = None,
                    mode: str | None = None, detected=None) -> pd.DataFrame:
    """The detector's level changes in the series in view (a few per case). ``detected``: the
    store's FindingsState; once its worker has run the detector over every series, its findings
    are what is shown (the same detector on the same series). Where no worker runs (None: tests,
    tools) or it failed, the detector runs on these series now (5,000 commits: ~60 ms a series),
    reading the samples of the rows it uses (the newest commits of each series: the gate's lean
    frame's way). Kept on the load (data.findings_in_view) either way. While the worker runs,
    update shows no marks and never calls this (marks_pending). ``rows``: the case's rows of
    that metric (and mode), if the caller has them."""
    done = worker_done(detected)

    def find() -> pd.DataFrame:
        from regressions import find_changes, findings_frame  # imports scipy: on first use

        in_view = rows if rows is not None else run.of_case(case, samples=False, metric=source, mode=mode)
        if done:
            series = set(zip(in_view["benchmark"].astype(str).tolist(), in_view["params_key"].astype(str).tolist()))
            found = findings_frame(workers_changes(detected, run, series))
        else:
            found = findings_frame(find_changes(in_view, samples_of=run.table.samples))
        if found.empty:
            return pd.DataFrame(columns=["impl", "commit_hash", "direction", "relative_change", "confirmed"])
        lookup = run.series_of_params
        found["impl"] = [lookup.get((b, p), (None, None))[1] for b, p in zip(found["benchmark"], found["params"])]
        return found

    return data.findings_in_view.get(_changes_key(run, case, source, mode, done), find)


def _changes_key(run: Run, case: str, source: str, mode: str | None, from_worker: bool) -> tuple:
    return ("trends", run.machine, run.env_name, case, source, mode, from_worker)


def update(data: DashboardData, machine, env, case, metric, impl, x_axis, logy, commit, theme="light", mode=None,
           detected=None):
    """The trend figure for one case, metric and mode (None: forward, else the case's first);
    ``detected``: the store's FindingsState (its findings mark the changes once it is done)."""
    run = data.run(machine, env)
    if run is None or not case:
        return error_figure(lambda: theme)("No case matches the filters.")
    _, mode = mode_choice(run, case, mode)
    if metric == speedup_tables.SPEEDUP.name:
        return speedup_figure(data, run, case, mode, impl, x_axis, logy, commit, theme, marks_of_run(data, run))
    metric = metric if metric in metrics.METRICS else "latency"
    source_metric = metrics.stored_metric_of(metrics.METRICS[metric].source)
    rows = run.of_case(case, samples=False, metric=source_metric, mode=mode)
    pending = marks_pending(detected)
    changes = None if pending else _series_changes(data, run, case, source_metric, rows, mode, detected)
    if impl:
        rows = rows[rows["impl"].astype(str).isin(impl)]
    rows = rows.merge(commit_axis(data, run), on="commit_hash", how="left") if len(rows) else rows
    if rows.empty:
        return error_figure(lambda: theme)(f"{case}: nothing measured for this selection.")
    if mode != metrics.FORWARD and metric not in metrics.STORED_METRICS:
        return error_figure(lambda: theme)(f"{metrics.METRICS[metric].label} is derived for the forward mode only "
                                           f"(the cost model counts a forward's flops and bytes); {mode} shows "
                                           "latency, peak memory and kernels.")
    derived = derived_metrics.derive(rows, metric, data.ceilings)
    derived["reason"] = reason_column(derived, run.series, data.results_dir, run.machine)  # why n/a, if recorded
    subjects = commit_messages.subjects(data.project.repo, data.project.commit_rank)
    if subjects:  # what each commit says it did, in the hover
        derived["subject"] = derived["commit_hash"].astype(str).map(subjects)
    if impl and changes is not None:
        changes = changes[changes["impl"].isin(impl)]
    spec = metrics.METRICS[metric]
    title = f"{spec.label} — {case} — {mode} — {run.machine}"
    if pending:
        title += pending_note(detected)
    return build_trend_figure(derived, metric, changes, resolve_commit(run, commit) if commit else None,
                              x_axis or "commit", "log" in (logy or []), theme, title=title,
                              run_marks=marks_of_run(data, run))


def commit_axis(data: DashboardData, run: Run) -> pd.DataFrame:
    """The run's commits with their position and date text (the figure's x on either axis), once
    per load."""
    def axis() -> pd.DataFrame:
        return run.commits[["commit_hash", "position"]].assign(date_text=date_texts(run.commits["date"]))

    return data.kept.get(("commit axis", run.machine, run.env_name), axis)


def speedup_figure(data: DashboardData, run: Run, case: str, mode: str | None, impl, x_axis, logy, commit,
                   theme="light", marks=None):
    """Fused over the best unfused and over the best fused peer at every commit, with the band
    the two 99 % CIs give (speedup_tables.speedup_history); Implementation picks the ones compared."""
    rows = run.of_case(case, samples=False, metric="latency", mode=mode)
    rows = rows.merge(commit_axis(data, run), on="commit_hash", how="left") if len(rows) else rows
    baselines = [i for i in (impl or []) if i != metrics.FUSED] or None
    history = speedup_tables.speedup_history(rows, baselines)
    if history.empty:
        return error_figure(lambda: theme)(f"{case} ({mode}): no commit has a fused and a compared latency.")
    return build_trend_figure(history, speedup_tables.SPEEDUP, None, resolve_commit(run, commit) if commit else None,
                              x_axis or "commit", "log" in (logy or []), theme,
                              title=f"Speedup of fused (t_best / t_fused) — {case} — {mode} — {run.machine}",
                              run_marks=marks)


def register(app, store: ResultsStore):
    _generic_trends.register(app, store)
    register_run_controls(app, store, ID)
    register_facet_counts(app, store, ID, FACETS)
    theme = Input(qid(SHELL, "theme"), "value")

    @app.callback(Output(qid(ID, "case"), "options"), Output(qid(ID, "case"), "value"),
                  Output(qid(ID, "commit"), "options"),
                  inputs=dict(named_values(ID, ("machine", "env")), chosen=named_values(ID, CASE_FACETS)),
                  state=dict(current=State(qid(ID, "case"), "value")), prevent_initial_call=True)
    @guarded(lambda t: [], lambda t: None, lambda t: [])
    def _cases(machine, env, chosen, current):
        data = store.get()
        run = data.run(machine, env)
        cases = case_choices(run, chosen)
        return cases, current if current in cases else (cases[0] if cases else None), commit_options(run)

    @app.callback(Output(qid(ID, "mode"), "options"), Output(qid(ID, "mode"), "value"),
                  inputs=named_values(ID, ("machine", "env", "case")),
                  state=dict(current=State(qid(ID, "mode"), "value")), prevent_initial_call=True)
    @guarded(lambda t: [], lambda t: None)
    def _modes(machine, env, case, current):
        return mode_choice(store.get().run(machine, env), case, current)

    register_marks_poll(app, store, ID)

    @app.callback(Output(f"{ID}-figure", "figure"), poll_output(ID),
                  inputs=dict(named_values(ID, ("machine", "env", "case", "metric", "impl", "logy", "commit", "mode")),
                              x_axis=Input(qid(ID, "x"), "value"), theme=theme, marks_ready=marks_ready_input(ID)))
    @guarded(error_figure(), lambda t: True)
    def _figure(marks_ready, **named):  # marks_ready: only when to draw again; the rest are update's by name
        detected = store.findings_in_background()
        return update(store.get(), **named, detected=detected), poll_disabled(detected)

    @app.callback(Output("trends-commit-info", "children"),
                  inputs=dict(named_values(ID, ("machine", "env")), click=Input(f"{ID}-figure", "clickData"),
                              marked=Input(qid(ID, "commit"), "value"), theme=theme))
    @guarded(message)
    def _commit_info(**named):  # commit_info's parameters by name
        return commit_info(store.get(), **named)


PAGE = Page("/trends", "Trends", 1, layout, register, "one metric across commits", modes=(SUITE, GENERIC),
            mode_layouts=((GENERIC, _generic_trends.layout),))
