"""Compare for another project's asv results (generic mode): commit A vs B for every benchmark and
parameter combination, each judged in its own direction (regressions/direction.py, with
the benchmark's declared attribute) by asv's own significance rule."""

from __future__ import annotations

import pandas as pd
from dash import Input, Output, State, dcc, html

from dashboard.data import ab_compare, metrics
from dashboard.ui.callback_guards import guarded
from dashboard.ui.notices import message
from dashboard.ui.run_selector import register_run_controls, run_controls, run_of
from dashboard.ui.widgets import dropdown, labelled, named_values
from dashboard.data.dashboard_data import DashboardData
from dashboard.store.model import ResultsStore
from dashboard.pages._comparison import (
    COMMITS, DEFAULT_FACTOR, comparison_columns, comparison_controls, comparison_datatable, summary_line,
)
from dashboard.pages._why_na import why_na_line
from asv_results.units import display_unit, format_value, symbol_of
from dashboard.data.urlstate import Query, qid

ID = "gcompare"
COLUMNS = ["benchmark", "params_key", "old", "new", "unit", "ratio", "change"]


def layout(data: DashboardData, query: Query):
    run = run_of(data, query)
    names = sorted(run.series["benchmark"].unique()) if run is not None else []
    return html.Div([
        html.H1("Compare two commits"),
        html.P(["Generic asv results: ", data.what_was_loaded(), "."], className="hint", id="generic-line"),
        html.Div(run_controls(ID, data, query, COMMITS), className="controls"),
        html.Div([
            labelled("Benchmark", dropdown(ID, "benchmark", names, query.many("benchmark", allowed=names), multi=True,
                                           placeholder="all"), "34rem"),
            *comparison_controls(ID, query),
        ], className="controls"),
        html.P("Significant = differs by more than the factor AND asv's test agrees (Mann-Whitney U on the "
               "samples, p < 0.002; non-overlapping 99 % CIs where no samples). Ratio = new / old; worse and "
               "better follow each benchmark's direction (a falling MB/s is worse).", className="hint"),
        html.Div(id="gcompare-summary"),
        comparison_datatable("gcompare-table", comparison_columns(COLUMNS)),
    ])


def compare_table(data: DashboardData, machine, env, a, b, factor, benchmarks) -> pd.DataFrame:
    """Every series at A and at B (those of ``benchmarks`` when some are chosen), with asv's verdict."""
    return _compared(data, machine, env, a, b, factor, benchmarks)[0]


def _compared(data: DashboardData, machine, env, a, b, factor, benchmarks) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """compare_table's table and the rows at A and B it compared (None without a run)."""
    run = data.run(machine, env)
    if run is None or not a or not b:
        return pd.DataFrame(columns=COLUMNS + ["significant"]), None
    old, new = run.at_commit(a, samples=False), run.at_commit(b, samples=False)
    if benchmarks:
        old, new = old[old["benchmark"].isin(benchmarks)], new[new["benchmark"].isin(benchmarks)]
    units = run.series.drop_duplicates("benchmark").set_index("benchmark")["unit"]
    better = {name: metrics.better_of(name, unit if isinstance(unit, str) else None, data.benchmarks.get(name))
              for name, unit in units.items()}
    return ab_compare.compare_rows(old, new, float(factor or DEFAULT_FACTOR), better, key=ab_compare.SERIES_KEY, fields=(),
                                samples=run.table.samples), pd.concat([old, new]) if a != b else new


def update(data: DashboardData, machine, env, a, b, factor, sig, benchmarks):
    """(table rows, table columns, summary): values in one scaled unit when every row has the same
    unit, else each with its own ("196 µs", "312 MB")."""
    table, compared = _compared(data, machine, env, a, b, factor, benchmarks)
    units = set(table["unit"].dropna().astype(str))
    shown = display_unit(units.pop() if len(units) == 1 else None, table[["old", "new"]].to_numpy(dtype=float)) \
        if len(units) <= 1 else None
    columns = comparison_columns(COLUMNS, shown)
    if not a or not b:
        return [], columns, message("Pick two commits.")
    shown_rows = table[table["significant"]] if "only" in (sig or []) else table
    rows = shown_rows[COLUMNS].copy()
    if shown is not None:
        rows["old"], rows["new"] = shown(rows["old"]), shown(rows["new"])
        rows["unit"] = shown.symbol
    else:
        rows["old"] = [format_value(v, u) for v, u in zip(rows["old"], rows["unit"])]
        rows["new"] = [format_value(v, u) for v, u in zip(rows["new"], rows["unit"])]
        rows["unit"] = rows["unit"].map(lambda u: symbol_of(u) if isinstance(u, str) else "")
    records = rows.astype(object).where(rows.notna(), None).to_dict("records")
    run = data.run(machine, env)
    return records, columns, html.Div([summary_line(table, shown_rows, a, b, run),
                                       *why_na_line(data, run, compared, [a, b], "gcompare-why-na")])


def register(app, store: ResultsStore):
    register_run_controls(app, store, ID, COMMITS)
    keys = ("machine", "env", "a", "b", "factor", "sig")  # and the benchmarks, whose control is "benchmark"

    @app.callback(Output("gcompare-table", "data"), Output("gcompare-table", "columns"),
                  Output("gcompare-summary", "children"),
                  inputs=dict(named_values(ID, keys), benchmarks=Input(qid(ID, "benchmark"), "value")))
    @guarded(lambda t: [], lambda t: comparison_columns(COLUMNS), message)
    def _update(**named):  # update's parameters by name
        return update(store.get(), **named)

    @app.callback(Output("gcompare-download", "data"), inputs=dict(clicks=Input("gcompare-csv-button", "n_clicks")),
                  state=dict(named_values(ID, keys, State), benchmarks=State(qid(ID, "benchmark"), "value")),
                  prevent_initial_call=True)
    def _download(clicks, machine, env, a, b, factor, sig, benchmarks):
        table = compare_table(store.get(), machine, env, a, b, factor, benchmarks)
        if "only" in (sig or []):
            table = table[table["significant"]]
        return dcc.send_string(table.to_csv(index=False), f"compare-{machine}-{(a or '')[:8]}-{(b or '')[:8]}.csv")
