"""Compare: commit A vs commit B for every case and implementation — old -> new, ratio and
whether the change is significant by asv's own rule; sortable, filterable, "significant only",
CSV export."""

from __future__ import annotations

import pandas as pd
from dash import Input, Output, State, dcc, html

from dashboard.data import ab_compare, facet_filters, metrics
from dashboard.ui.callback_guards import guarded
from dashboard.ui.facet_widgets import facet_controls, register_facet_counts
from dashboard.ui.notices import message
from dashboard.ui.run_selector import register_run_controls, run_controls, run_of
from dashboard.ui.widgets import dropdown, labelled, named_values
from dashboard.data.dashboard_data import GENERIC, SUITE, DashboardData
from dashboard.store.model import ResultsStore
from dashboard.pages import Page, _generic_compare
from dashboard.pages._comparison import (
    COMMITS, DEFAULT_FACTOR, comparison_columns, comparison_controls, comparison_datatable, summary_line,
)
from dashboard.pages._why_na import why_na_line
from asv_results.units import DisplayUnit, display_unit
from dashboard.data.urlstate import Query

ID = "compare"
# The case split into its fields (a long case key once pushed the numbers off screen); each row's
# data still carries its case key (the CSV has it too).
COLUMNS = ["op", "dtype", "activation", "shape", "impl", "mode", "old", "new", "ratio", "change"]


def layout(data: DashboardData, query: Query):
    run = run_of(data, query)
    return html.Div([
        html.H1("Compare two commits"),
        html.Div(run_controls(ID, data, query, COMMITS), className="controls"),
        html.Div(facet_controls(ID, run, query), className="controls"),
        html.Div([
            labelled("Metric", dropdown(ID, "metric", [{"label": metrics.METRICS[m].label, "value": m}
                                                        for m in metrics.STORED_METRICS],
                                        query.one("metric", "latency", allowed=metrics.STORED_METRICS),
                                        clearable=False)),
            *comparison_controls(ID, query),
        ], className="controls"),
        html.P("Significant = differs by more than the factor AND asv's test agrees (Mann-Whitney U on the "
               "samples, p < 0.002; non-overlapping 99 % CIs where no samples). Ratio = new / old.",
               className="hint"),
        html.Div(id="compare-summary"),
        comparison_datatable("compare-table", _columns()),
    ])


def _columns(shown: DisplayUnit = DisplayUnit("")) -> list[dict]:
    return comparison_columns(COLUMNS, shown)


def compare_table(data: DashboardData, machine, env, a, b, metric, factor, op, dtype, activation, shape, impl,
                  mode=None) -> tuple[pd.DataFrame, str]:
    """The table (all rows, filters applied) and the asv unit of its values ("seconds")."""
    table, unit, _ = _compared(data, machine, env, a, b, metric, factor, op, dtype, activation, shape, impl, mode)
    return table, unit


def _compared(data: DashboardData, machine, env, a, b, metric, factor, op, dtype, activation, shape, impl,
              mode=None) -> tuple[pd.DataFrame, str, pd.DataFrame | None]:
    """compare_table's table and unit, and the rows at A and B it compared (None without a run)."""
    run = data.run(machine, env)
    if run is None or not a or not b:
        return pd.DataFrame(columns=["case", *COLUMNS, "significant"]), "", None
    metric = metric if metric in metrics.STORED_METRICS else "latency"
    selections = {"op": op, "dtype": dtype, "activation": activation, "shape": shape, "impl": impl, "mode": mode}
    old = facet_filters.apply_filters(run.at_commit(a, samples=False), selections)
    new = facet_filters.apply_filters(run.at_commit(b, samples=False), selections)
    old, new = old[old["metric"] == metric], new[new["metric"] == metric]
    table = ab_compare.compare_rows(old, new, float(factor or DEFAULT_FACTOR), metrics.METRICS[metric].better,
                                 samples=run.table.samples)
    unit = next((str(u) for u in table["unit"] if isinstance(u, str)), "")
    return table, unit, pd.concat([old, new]) if a != b else new


def update(data: DashboardData, machine, env, a, b, metric, factor, sig, op, dtype, activation, shape, impl,
           mode=None):
    """(table rows, table columns, summary) for the page."""
    table, unit, compared = _compared(data, machine, env, a, b, metric, factor, op, dtype, activation, shape, impl,
                                      mode)
    shown = display_unit(unit, table[["old", "new"]].to_numpy(dtype=float))
    if not a or not b:
        return [], _columns(shown), message("Pick two commits.")
    shown_rows = table[table["significant"]] if "only" in (sig or []) else table
    run = data.run(machine, env)
    summary = html.Div([summary_line(table, shown_rows, a, b, run),
                        *why_na_line(data, run, compared, [a, b], "compare-why-na")])
    rows = shown_rows[["case", *COLUMNS]].assign(old=shown(shown_rows["old"]), new=shown(shown_rows["new"]))
    return rows.astype(object).where(rows.notna(), None).to_dict("records"), _columns(shown), summary


def csv_text(data: DashboardData, machine, env, a, b, metric, factor, sig, op, dtype, activation, shape, impl,
             mode=None) -> str:
    """The whole (filtered) comparison as CSV, significance included (update's parameters)."""
    table, _ = compare_table(data, machine, env, a, b, metric, factor, op, dtype, activation, shape, impl, mode)
    if "only" in (sig or []):
        table = table[table["significant"]]
    return table.to_csv(index=False)


def register(app, store: ResultsStore):
    _generic_compare.register(app, store)
    register_run_controls(app, store, ID, COMMITS)
    register_facet_counts(app, store, ID)
    keys = ("machine", "env", "a", "b", "metric", "factor", "sig", *metrics.FACETS)  # update's parameters

    @app.callback(Output("compare-table", "data"), Output("compare-table", "columns"),
                  Output("compare-summary", "children"), inputs=named_values(ID, keys))
    @guarded(lambda t: [], lambda t: _columns(), message)
    def _update(**named):  # update's parameters by name
        return update(store.get(), **named)

    @app.callback(Output("compare-download", "data"), inputs=dict(clicks=Input("compare-csv-button", "n_clicks")),
                  state=named_values(ID, keys, State), prevent_initial_call=True)
    def _download(clicks, **named):
        a, b = (named["a"] or "")[:8], (named["b"] or "")[:8]
        return dcc.send_string(csv_text(store.get(), **named), f"compare-{named['machine']}-{a}-{b}.csv")


PAGE = Page("/compare", "Compare", 2, layout, register, "commit A vs commit B", modes=(SUITE, GENERIC),
            mode_layouts=((GENERIC, _generic_compare.layout),))
