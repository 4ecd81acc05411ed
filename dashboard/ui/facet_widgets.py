"""The facet filters the pages share (op, dtype, activation, shape, impl, mode), each choice with
the number of cases it leaves, and the callback that keeps the counts current.
"""

from __future__ import annotations

import dash
from dash import Input, Output

from dashboard.data import facet_filters, metrics
from dashboard.data.dashboard_data import DashboardData
from dashboard.figures import impl_sort_key
from dashboard.store.model import ResultsStore
from dashboard.data.run_view import Run
from dashboard.data.urlstate import Query, qid
from dashboard.ui.widgets import dropdown, labelled, named_values


FACET_LABELS = {"op": "Op", "dtype": "dtype", "activation": "Activation", "shape": "Shape", "impl": "Implementation",
                "mode": "Mode"}
ALL_WORD = "all"  # a filter value meaning no filter (the Kernels page writes it)


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
                  inputs=dict(machine=Input(qid(page, "machine"), "value"), env=Input(qid(page, "env"), "value"),
                              chosen=named_values(page, facets)), prevent_initial_call=True)
    def _counts(machine, env, chosen):
        return facet_option_lists(store.get(), machine, env, chosen, facets)


def facet_option_lists(data: DashboardData, machine, env, selections: dict, facets=metrics.FACETS) -> list:
    run = data.run(machine, env)
    if run is None:
        return [[] for _ in facets]
    values = facet_values(run.catalog)
    counts = facet_filters.facet_counts(run.catalog, selections)
    return [facet_options(values[f], counts[f]) for f in facets]
