"""Roofline: achieved TFLOP/s against arithmetic intensity for each case at one commit, under the
ceilings measured on that machine in that run; each fused point joined to its best unfused peer."""

from __future__ import annotations

from dash import Input, Output, html

from dashboard.data import derived_metrics, device_ceilings, facet_filters, metrics
from dashboard.ui.callback_guards import error_figure, guarded
from dashboard.ui.facet_widgets import facet_controls, register_facet_counts
from dashboard.ui.run_selector import register_run_controls, run_controls, run_of
from dashboard.ui.widgets import graph
from dashboard.figures import build_roofline_figure
from dashboard.data.dashboard_data import SUITE, DashboardData
from dashboard.store.model import ResultsStore
from dashboard.pages import Page
from dashboard.data.urlstate import SHELL, Query, qid

ID = "roofline"
COMMITS = {"commit": 0}
FACETS = tuple(f for f in metrics.FACETS if f != "mode")  # forward only: see the hint


def layout(data: DashboardData, query: Query):
    run = run_of(data, query)
    return html.Div([
        html.H1("Roofline"),
        html.Div(run_controls(ID, data, query, COMMITS), className="controls"),
        html.Div(facet_controls(ID, run, query, FACETS), className="controls"),
        html.P("Roof = min(measured matmul TFLOP/s of the dtype, intensity × measured copy GB/s). Intensity uses the "
               "minimum bytes a fully fused kernel must move (the suite's cost model), so a case's points share one x "
               "and a grey segment joins its fused point to its best unfused one. Marker shape = op. Forward mode "
               "only: the cost model counts a forward's flops and bytes, not a training step's.",
               className="hint"),
        graph(ID, "figure"),
    ])


def roofline_points(data: DashboardData, machine, env, commit, selections: dict):
    run = data.run(machine, env)
    if run is None:
        return None, None
    rows = facet_filters.apply_filters(run.at_commit(commit, samples=False), selections)
    rows = rows[(rows["metric"] == "latency") & (rows["mode"].astype(str) == metrics.FORWARD)]
    points = derived_metrics.derive(rows, "tflops")
    points["tflops"] = points["y"]
    points["roofline"] = derived_metrics.derive(rows, "roofline", data.ceilings)["y"].to_numpy()
    return points, device_ceilings.ceilings_of(data.ceilings, run.machine, run.env_name, commit)


def update(data: DashboardData, machine, env, commit, facets: dict | None = None, theme="light"):
    """The roofline at one commit; ``facets``: each facet of FACETS by name -> the values chosen."""
    points, ceilings = roofline_points(data, machine, env, commit, facets or {})
    if points is None or not commit:
        return error_figure(lambda: theme)("Pick a machine, environment and commit.")
    return build_roofline_figure(points, ceilings, theme, title=f"Roofline — {machine}, commit {commit[:8]}")


def register(app, store: ResultsStore):
    register_run_controls(app, store, ID, COMMITS)
    register_facet_counts(app, store, ID, FACETS)

    # named inputs: the facets arrive as a dict by name, never by their position in a list
    @app.callback(Output(f"{ID}-figure", "figure"),
                  inputs=dict(machine=Input(qid(ID, "machine"), "value"), env=Input(qid(ID, "env"), "value"),
                              commit=Input(qid(ID, "commit"), "value"),
                              facets={f: Input(qid(ID, f), "value") for f in FACETS},
                              theme=Input(qid(SHELL, "theme"), "value")))
    @guarded(error_figure())
    def _update(machine, env, commit, facets, theme):
        return update(store.get(), machine, env, commit, facets, theme)


PAGE = Page("/roofline", "Roofline", 3, layout, register, "achieved TFLOP/s vs arithmetic intensity", modes=(SUITE,))
