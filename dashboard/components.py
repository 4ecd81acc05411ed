"""Controls and panels shared by the pages, and the generic callbacks behind them.

Pages build their controls here so that every control has a URL-backed id (urlstate.qid), the
run selector (machine, environment, commits) and the facet filters (with case counts) behave the
same everywhere, and bad input shows a message instead of a traceback.
"""

from __future__ import annotations

import functools

import dash
from dash import Input, Output, State, dash_table, dcc, html

from dashboard import commit_order, facet_filters, metrics
from dashboard.callbacks_boundary import log_failure
from dashboard.figures import build_empty_figure, impl_sort_key
from dashboard.dashboard_data import DashboardData
from dashboard.model import ResultsStore
from dashboard.run_view import Run
from dashboard.urlstate import Query, qid

FACET_LABELS = {"op": "Op", "dtype": "dtype", "activation": "Activation", "shape": "Shape", "impl": "Implementation",
                "mode": "Mode"}
ALL_WORD = "all"  # a filter value meaning no filter (the Kernels page writes it)
GRAPH_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def graph(page: str, name: str, figure=None) -> dcc.Graph:
    """A figure with Plotly's own modebar (image export stays available)."""
    return dcc.Loading(dcc.Graph(id=f"{page}-{name}", figure=figure or {}, config={
        **GRAPH_CONFIG, "toImageButtonOptions": {**GRAPH_CONFIG["toImageButtonOptions"],
                                                 "filename": f"fused-mlp-{page}-{name}"}}), delay_show=400)


WORSE_CELL = {"backgroundColor": "rgba(214,39,40,0.18)"}  # a value that got worse: red
BETTER_CELL = {"backgroundColor": "rgba(44,160,44,0.18)"}


def styled_datatable(table_id: str, columns: list[dict], conditional: list[dict], page_size: int = 25,
                     **extra) -> dash_table.DataTable:
    """A sortable, filterable, paged table in the page's font and theme colours."""
    return dash_table.DataTable(
        id=table_id, columns=columns, data=[], sort_action="native", filter_action="native",
        page_action="native", page_size=page_size, style_table={"overflowX": "auto"},
        style_cell={"fontFamily": "inherit", "fontSize": "13px", "padding": "4px 8px", "textAlign": "left"},
        style_data_conditional=conditional,
        css=[{"selector": ".dash-spreadsheet-container .dash-spreadsheet-inner th",
              "rule": "background-color: var(--panel-2); color: var(--text);"},
             {"selector": ".dash-spreadsheet-container .dash-spreadsheet-inner td",
              "rule": "background-color: var(--panel); color: var(--text);"}], **extra)


def labelled(label: str, control, width: str = "12rem") -> html.Div:
    return html.Div([html.Label(label, className="control-label"), control], className="control",
                    style={"width": width})


def dropdown(page: str, key: str, options, value, multi=False, clearable=None, placeholder=None) -> dcc.Dropdown:
    return dcc.Dropdown(id=qid(page, key), options=options, value=value, multi=multi,
                        clearable=multi if clearable is None else clearable, placeholder=placeholder)


# --------------------------------------------------------------------------- run selection


def commit_label(commit: str, date) -> str:
    return f"{commit[:8]} · {date:%Y-%m-%d %H:%M}"


def commit_options(run: Run | None) -> list[dict]:
    if run is None:
        return []
    commits = run.commits.iloc[::-1]  # newest first
    return [{"label": commit_label(h, d), "value": h} for h, d in zip(commits["commit_hash"], commits["date"])]


def named_commit(run: Run | None, wanted: str | None) -> str | None:
    """The commit of the run that ``wanted`` names (commit_order.resolve_commit: the gate's rule,
    a unique hash prefix, any case), or None."""
    if run is None or not wanted:
        return None
    try:
        return commit_order.resolve_commit(run.commits["commit_hash"].tolist(), wanted)
    except ValueError:
        return None


def commit_or_newest(run: Run | None, wanted: str | None, offset_from_newest: int = 0) -> str | None:
    """The commit ``wanted`` names in the run, else its newest minus ``offset_from_newest``."""
    if run is None or run.commits.empty:
        return None
    hashes = run.commits["commit_hash"].tolist()
    return named_commit(run, wanted) or hashes[max(len(hashes) - 1 - offset_from_newest, 0)]


resolve_commit = commit_or_newest  # the name the pages import; the matching rule is commit_order's


def run_of(data: DashboardData, query: Query) -> Run | None:
    """The run a link asks for; a machine or environment these results do not have is noted on
    the query (the page then says what it shows instead)."""
    machine, env = query.one("machine"), query.one("env")
    static_machines = {m for m, _ in data.static_runs}
    if machine in static_machines and machine not in data.machine_names():
        machine = env = None  # the Kernels page's machine, carried over: no timings there, so the default run
    if machine is not None and machine not in data.machine_names():
        query.reject("machine", machine)
    run = data.run(machine, env)
    if env is not None and run is not None and env != run.env_name and machine in (None, run.machine):
        query.reject("env", env)
    return run


def commit_of(run: Run | None, query: Query, key: str, offset_from_newest: int = 0) -> str | None:
    """commit_or_newest for ``key`` of the query, noting a commit the run does not have."""
    wanted = query.one(key)
    if wanted and named_commit(run, wanted) is None:
        query.reject(key, wanted)
    return commit_or_newest(run, wanted, offset_from_newest)


def marked_commit(run: Run | None, query: Query) -> str | None:
    """The commit a link marks, if the run has it (else nothing is marked, and the page says so)."""
    wanted = query.one("commit")
    chosen = named_commit(run, wanted)
    if wanted and chosen is None:
        query.reject("commit", wanted)
    return chosen


def trend_view_controls(page: str, query: Query, run: Run | None) -> list:
    """The x axis (commit order or date), a log y axis and the commit to mark, for a trend plot."""
    return [
        labelled("x axis", dcc.RadioItems(id=qid(page, "x"), options=[{"label": " commit order", "value": "commit"},
                                                                       {"label": " date", "value": "date"}],
                                          value=query.one("x", "commit", allowed=("commit", "date")), inline=True),
                 "13rem"),
        labelled("y axis", dcc.Checklist(id=qid(page, "logy"), options=[{"label": " log", "value": "log"}],
                                         value=query.many("logy", allowed=("log",)), inline=True), "6rem"),
        labelled("Mark commit", dropdown(page, "commit", commit_options(run), marked_commit(run, query),
                                         clearable=True, placeholder="none"), "15rem"),
    ]


def run_controls(page: str, data: DashboardData, query: Query, commit_keys: dict[str, int] | None = None):
    """Machine, environment and commit dropdowns. ``commit_keys``: key -> default offset from the
    newest commit (Compare: {"a": 1, "b": 0})."""
    run = run_of(data, query)
    machines = data.machine_names()
    controls = [
        labelled("Machine", dropdown(page, "machine", machine_options(data, machines),
                                     run.machine if run else None, clearable=False), "21rem"),
        labelled("Environment", dropdown(page, "env", env_options(data, run.machine) if run else [],
                                         run.env_name if run else None, clearable=False), "19rem"),
    ]
    for key, offset in (commit_keys or {}).items():
        label = {"commit": "Commit", "a": "Commit A (old)", "b": "Commit B (new)"}.get(key, key)
        controls.append(labelled(label, dropdown(page, key, commit_options(run),
                                                 commit_of(run, query, key, offset), clearable=False),
                                 "15rem"))
    return controls


def machine_options(data: DashboardData, machines: list[str]) -> list[dict]:
    """A machine with its distinct commits (an environment's commits count once), and its
    environments when there are several: the plots show one environment at a time."""
    options = []
    for m in machines:
        runs = [r for (machine, _), r in data.runs.items() if machine == m]
        commits = len(set().union(*(set(r.commits["commit_hash"]) for r in runs))) if runs else 0
        envs = f", {len(runs)} envs" if len(runs) > 1 else ""
        options.append({"label": f"{m} ({commits} commit{'s' if commits != 1 else ''}{envs})", "value": m})
    return options


def env_options(data: DashboardData, machine: str | None) -> list[dict]:
    """The machine's environments, each with the commits it has (what a plot of it shows)."""
    options = []
    for env in data.envs_of(machine) if machine else []:
        n = len(data.runs[(machine, env)].commits)
        options.append({"label": f"{env} ({n} commit{'s' if n != 1 else ''})", "value": env})
    return options


def register_run_controls(app: dash.Dash, store: ResultsStore, page: str, commit_keys: dict[str, int] | None = None):
    """Changing the machine refreshes the environments; changing either refreshes the commits."""

    @app.callback(Output(qid(page, "env"), "options"), Output(qid(page, "env"), "value"),
                  Input(qid(page, "machine"), "value"), State(qid(page, "env"), "value"), prevent_initial_call=True)
    def _envs(machine, env):
        data = store.get()
        envs = data.envs_of(machine) if machine else []
        return env_options(data, machine), env if env in envs else (envs[0] if envs else None)

    if commit_keys:
        keys = list(commit_keys)

        @app.callback([Output(qid(page, k), "options") for k in keys] + [Output(qid(page, k), "value") for k in keys],
                      Input(qid(page, "machine"), "value"), Input(qid(page, "env"), "value"),
                      [State(qid(page, k), "value") for k in keys], prevent_initial_call=True)
        def _commits(machine, env, *current):
            run = store.get().run(machine, env)
            options = commit_options(run)
            values = [commit_or_newest(run, c, commit_keys[k]) for k, c in zip(keys, current)]
            return [options] * len(keys) + values


# --------------------------------------------------------------------------- facet filters


def facet_options(values, counts: dict[str, int]) -> list[dict]:
    ordered = sorted(values, key=impl_sort_key) if values and set(values) <= {"fused", "eager", "compile",
                                                                               "cublaslt"} else values
    return [{"label": f"{v} ({counts.get(v, 0)})", "value": v, "disabled": counts.get(v, 0) == 0}
            for v in ordered]


def facet_values(catalog) -> dict[str, list[str]]:
    out = {}
    for facet in metrics.FACETS:
        values = catalog[facet].astype(str).unique() if len(catalog) else []
        out[facet] = (sorted(values, key=impl_sort_key) if facet == "impl"
                      else sorted(values, key=metrics.mode_order) if facet == "mode"
                      else facet_filters.sort_values_naturally(values))
    return out


def facet_controls(page: str, run: Run | None, query: Query, facets=metrics.FACETS) -> list:
    """Multi-select filters for op, dtype, activation, shape, implementation; labels count cases."""
    catalog = run.catalog if run is not None else facet_filters.empty_catalog()
    values = facet_values(catalog)
    # "all" is the Kernels page's word for no filter (its dtype=all follows to the other pages)
    selections = {f: [] if query.many(f) == [ALL_WORD] else query.many(f, allowed=values[f]) for f in metrics.FACETS}
    counts = facet_filters.facet_counts(catalog, selections)
    return [labelled(FACET_LABELS[f], dropdown(page, f, facet_options(values[f], counts[f]), selections[f],
                                               multi=True, placeholder="all"),
                     "22rem" if f == "shape" else "13rem") for f in facets]


def register_facet_counts(app: dash.Dash, store: ResultsStore, page: str, facets=metrics.FACETS):
    """Keep each filter's counts in step with the other filters and the run."""

    @app.callback([Output(qid(page, f), "options") for f in facets],
                  Input(qid(page, "machine"), "value"), Input(qid(page, "env"), "value"),
                  [Input(qid(page, f), "value") for f in facets], prevent_initial_call=True)
    def _counts(machine, env, *chosen):
        return facet_option_lists(store.get(), machine, env, dict(zip(facets, chosen)), facets)


def facet_option_lists(data: DashboardData, machine, env, selections: dict, facets=metrics.FACETS) -> list:
    run = data.run(machine, env)
    if run is None:
        return [[] for _ in facets]
    values = facet_values(run.catalog)
    counts = facet_filters.facet_counts(run.catalog, selections)
    return [facet_options(values[f], counts[f]) for f in facets]


# --------------------------------------------------------------------------- panels


def empty_state(data: DashboardData) -> html.Div:
    return html.Div([
        html.H2("No benchmark results to show"),
        html.P(f"{data.problem}."),
        html.P(["Point the dashboard at a folder of asv results, this suite's or any other project's: ",
                html.Code("python -m dashboard --results DIR"), " (", html.Code("asv run"),
                " writes them into the results_dir of its asv.conf.json). For this suite, ",
                html.Code("python -m benchmarks.run --machine NAME"), " on a GPU runner writes ",
                html.Code("results/"), "; ",
                html.Code("TRITON_INTERPRET=1 python -m benchmarks.run --machine cpu --grid tiny"),
                " checks the pipeline on a CPU (not performance numbers)."]),
        load_report_panel(data, open_=True),
    ], className="empty-state", id="empty-state")


def generic_notice(data: DashboardData, page: str) -> html.Div:
    """What Overview and Roofline say about another project's results: why they are off, what
    was loaded, and where to look instead."""
    return html.Div([
        html.H1(page),
        html.P([f"{page} is off for these results: it compares this suite's fused kernels with their unfused "
                "peers, which needs benchmarks with ", html.Code("case"), " and ", html.Code("impl"),
                " parameters naming a Case, and the device ceilings of ", html.Code("bench_device"),
                "; none are here. Loaded: ", data.what_was_loaded(), ". Trends, Compare and Regressions show "
                "every benchmark."], className="message", id="generic-notice"),
        html.P([dcc.Link("Trends →", href="/trends"), "  ", dcc.Link("Compare →", href="/compare"), "  ",
                dcc.Link("Regressions →", href="/regressions")]),
    ])


def static_only_notice(data: DashboardData, page: str) -> html.Div:
    """What a timing page says when the results hold only static compile metrics."""
    return html.Div([
        html.H1(page),
        html.P([f"No timings in these results yet, so {page} has nothing to show: they hold only static compile "
                "metrics (", data.what_was_loaded(static=True), "), which are never mixed with timings. "
                "Timings come from ", html.Code("python -m benchmarks.run --machine NAME"), " on a GPU runner."],
               className="message", id="static-notice"),
        html.P([dcc.Link("Kernels →", href="/kernels")]),
    ])


def link_notice(query: Query, layout) -> html.Div | None:
    """What a link asked for that these results do not have, and what the page shows instead
    (read from the controls' values in ``layout``): a copied link never silently shows another view."""
    if not query.rejected:
        return None
    shown = {c.id["key"]: getattr(c, "value", None) for c in _walk(layout)
             if isinstance(getattr(c, "id", None), dict) and c.id.get("key") in query.rejected}
    parts = []
    for key, asked in query.rejected.items():
        value = shown.get(key)  # a list (a filter): the values it has were kept, the others left out
        instead = f"showing {value}" if value not in (None, "") and not isinstance(value, list) else "left out"
        parts.append(f"{key} {asked!r} ({instead})")
    return html.Div(["This link asks for what these results do not have: ", "; ".join(parts),
                     ". The nearest view is shown; change a control to update the link."],
                    className="message message-warning", id="link-notice")


def _walk(component):
    if isinstance(component, (list, tuple)):
        for c in component:
            yield from _walk(c)
    elif component is not None and not isinstance(component, (str, int, float)):
        yield component
        yield from _walk(getattr(component, "children", None))


def load_report_panel(data: DashboardData, open_: bool = False):
    report = data.report
    if report.ok:
        return html.Div(id="load-report")
    items = [html.Li([html.Code(s.path), f": {s.reason}"]) for s in report.skipped]
    items += [html.Li(p) for p in report.problems]
    summary = (f"{len(report.skipped)} file(s) skipped" if report.skipped else "") + (
        f"{', ' if report.skipped else ''}{len(report.problems)} partial" if report.problems else "")
    return html.Details([html.Summary(f"⚠ {summary} while loading {data.results_dir}"), html.Ul(items)],
                        open=open_, className="load-report", id="load-report")


def message(text: str, kind: str = "info") -> html.Div:
    return html.Div(text, className=f"message message-{kind}")


def guarded(*fallback_factories):
    """Wrap a callback body: on an unexpected error, log it and return the fallbacks built from the
    error text (a message in the UI, never a traceback)."""

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args):
            try:
                return fn(*args)
            except Exception as exc:  # the UI shows the reason; the log one line (the first traceback per site)
                log_failure(f"callback {fn.__name__}", exc)
                text = f"Could not build this view: {type(exc).__name__}: {exc}"
                outs = [f(text) for f in fallback_factories]
                return outs[0] if len(outs) == 1 else tuple(outs)
        return inner

    return wrap


def error_figure(theme_getter=lambda: "light"):
    return lambda text: build_empty_figure(text, theme_getter())
