"""Overview: the newest commit of a machine at a glance — fused vs the best unfused baseline per
shape x activation (one heatmap per op and dtype), the device and its measured ceilings, and how
many cases got faster or slower than the previous commit."""

from __future__ import annotations

from dash import Input, Output, dcc, html

from dashboard import metrics
from dashboard.components import (
    error_figure, facet_controls, graph, guarded, message, register_facet_counts, register_run_controls,
    run_controls, run_of,
)
from dashboard.figures import build_speedup_heatmap_figure
from dashboard.model import DashboardData, ResultsStore
from dashboard.pages import Page
from dashboard.urlstate import SHELL, Query, link, qid

ID = "overview"
COMMITS = {"commit": 0}
FACETS = metrics.FACETS
FACTOR = 1.1  # asv compare's default factor: a change smaller than 10 % is not counted


def layout(data: DashboardData, query: Query):
    run = run_of(data, query)
    return html.Div([
        html.H1("Overview"),
        html.Div(run_controls(ID, data, query, COMMITS), className="controls"),
        html.Div(facet_controls(ID, run, query), className="controls"),
        html.P("Implementation picks the baselines: the speedup is t(best selected baseline) / t(fused).",
               className="hint"),
        html.Div([html.Div(id="overview-device", className="card"),
                  html.Div(id="overview-changes", className="card")], className="cards"),
        graph(ID, "heatmap"),
    ])


def update(data: DashboardData, machine, env, commit, op, dtype, activation, shape, impl, theme="light"):
    """(heatmap figure, device panel, change counts panel) for one run at one commit."""
    run = data.run(machine, env)
    if run is None or commit not in set(run.commits["commit_hash"]):
        text = "Pick a machine, environment and commit."
        return error_figure(lambda: theme)(text), message(text), ""
    selections = {"op": op, "dtype": dtype, "activation": activation, "shape": shape}
    rows = metrics.apply_filters(run.at_commit(commit), selections)
    latency = rows[rows["metric"] == "latency"]
    baselines = [i for i in (impl or []) if i != metrics.FUSED] or None
    table = metrics.speedups(latency, baselines)
    figure = build_speedup_heatmap_figure(
        table, theme, title=f"Fused vs the best unfused baseline — {run.machine}, commit {commit[:8]}")
    return figure, device_panel(data, run.machine, run.env_name, commit), change_panel(data, run, commit, rows, theme)


def device_panel(data: DashboardData, machine: str, env: str, commit: str):
    identity = data.machine_identity(machine)
    ceilings = metrics.ceilings_of(data.ceilings, machine, env, commit)
    items = [html.Li([html.B(f"{k}: "), v]) for k, v in identity.items()] or [html.Li("no machine.json identity")]
    left_out = [p for p in data.ceiling_problems if (p.machine, p.env_name, p.commit_hash) == (machine, env, commit)]
    if ceilings is None:
        measured = [html.Li("no usable copy ceiling in this run (bench_device)" if left_out
                            else "no ceilings measured in this run (bench_device)")]
    else:
        measured = [html.Li([html.B("copy: "), f"{ceilings.copy_gbps:,.0f} GB/s"])]
        measured += [html.Li([html.B(f"matmul {d}: "), f"{t:,.3g} TFLOP/s"])
                     for d, t in sorted(ceilings.matmul_tflops.items())]
    measured += [html.Li(f"{p.what} left out: {p.reason}", className="bad") for p in left_out]
    return [html.H3(f"Device: {machine}"), html.Ul(items, className="kv"),
            html.H4("Measured ceilings (this run)"), html.Ul(measured, className="kv", id="overview-ceilings")]


def change_panel(data: DashboardData, run, commit: str, rows, theme: str):
    previous = run.previous_commit(commit)
    if previous is None:
        return [html.H3("Since the previous commit"), html.P("This is the run's first commit.")]
    selections = {f: None for f in FACETS}
    old = metrics.apply_filters(run.at_commit(previous), selections)
    old = old[old["metric"] == "latency"]
    old = old[old["case"].astype(str).isin(set(rows["case"].astype(str)))]
    table = metrics.compare_rows(old, rows[rows["metric"] == "latency"], FACTOR, "lower")
    counts = metrics.change_counts(table)
    href = link("/compare", {"machine": run.machine, "env": run.env_name, "a": previous, "b": commit,
                             "metric": "latency", "theme": theme})
    return [html.H3(f"Latency since {previous[:8]}"),
            html.Ul([html.Li([html.Span(str(counts["better"]), className="count good", id="overview-faster"),
                              " cases faster"]),
                     html.Li([html.Span(str(counts["worse"]), className="count bad", id="overview-slower"),
                              " cases slower"]),
                     html.Li(f"{counts['unchanged']} unchanged (within {FACTOR:.2g}× or not significant)"),
                     html.Li(f"{counts['other']} not comparable (skipped, failed or new)")], className="kv"),
            dcc.Link("Open in Compare →", href=href)]


def register(app, store: ResultsStore):
    register_run_controls(app, store, ID, COMMITS)
    register_facet_counts(app, store, ID)
    theme = Input(qid(SHELL, "theme"), "value")

    @app.callback(Output(f"{ID}-heatmap", "figure"), Output("overview-device", "children"),
                  Output("overview-changes", "children"),
                  Input(qid(ID, "machine"), "value"), Input(qid(ID, "env"), "value"), Input(qid(ID, "commit"), "value"),
                  *[Input(qid(ID, f), "value") for f in FACETS], theme)
    @guarded(error_figure(), lambda t: "", lambda t: t)
    def _update(*args):
        return update(store.get(), *args)


PAGE = Page("/", "Overview", 0, layout, register, "fused vs unfused at the newest commit")
