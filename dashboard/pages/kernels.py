"""Kernels: static compile metrics per commit — registers, spill bytes, shared memory and SASS
instructions of every kernel config offered on an architecture (one machine each), as the library's compile check reads them
from the compiler (dashboard.data.static_metrics). A table at one commit with the change since the
commit before, and one metric's history. Nothing here is a timing, and no timing is shown here.

"Across architectures" puts one config's numbers on every compile-metrics machine side by side
(H200 sm_90, B200 sm_100, RTX 50 sm_120, MI300 gfx942, MI355X gfx950), each at its newest commit
that compiled it.

URL keys: machine, commit, kernel, dtype, metric, changed, config.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from dash import Input, Output, State, dash_table, dcc, html
from dash.dash_table.Format import Format, Sign

from dashboard.data import static_metrics
from dashboard.ui.callback_guards import error_figure, guarded
from dashboard.ui.commit_choice import commit_of, commit_options, resolve_commit
from dashboard.ui.notices import message
from dashboard.ui.widgets import BETTER_CELL, WORSE_CELL, dropdown, graph, labelled, named_values, styled_datatable
from dashboard.figures import build_trend_figure
from dashboard.data.dashboard_data import DashboardData
from dashboard.store.model import ResultsStore
from dashboard.data.run_view import Run
from dashboard.pages import Page
from dashboard.pages._generic_trends import MAX_LINES, Measure
from dashboard.pages._why_na import why_na_line
from dashboard.data.urlstate import SHELL, Query, qid

ID = "kernels"
ALL = "all"
METRIC_KEYS = [m.key for m in static_metrics.METRICS]


def kernel_names(run: Run | None) -> list[str]:
    """'kernel/variant' of every config the run has, e.g. 'linear_act/tile'."""
    if run is None:
        return []
    return sorted({f"{k}/{v}" if v else k for k, v in zip(run.series["kernel"], run.series["variant"])})


def dtypes_of(run: Run | None) -> list[str]:
    return sorted(set(run.series["dtype"])) if run is not None else []


def _selected(series: pd.DataFrame, kernel: str | None, dtype: str | None) -> np.ndarray:
    keep = np.ones(len(series), dtype=bool)
    if kernel and kernel != ALL:
        name, _, variant = kernel.partition("/")
        keep &= (series["kernel"].to_numpy() == name) & (series["variant"].to_numpy() == variant)
    if dtype and dtype != ALL:
        keep &= series["dtype"].to_numpy() == dtype
    return keep


def resources_table(run: Run, commit: str, kernel=None, dtype=None, changed_only=False) -> pd.DataFrame:
    """The kernel configs at ``commit`` with each metric's change since the previous commit."""
    fields = run.series[["metric", *static_metrics.ROW_KEY]]
    current = static_metrics.resources_at(run.at_commit(commit, samples=False), fields)
    previous_commit = run.previous_commit(commit)  # None: at_commit gives no rows
    previous = static_metrics.resources_at(run.at_commit(previous_commit, samples=False), fields)
    table = static_metrics.with_previous(current, previous)
    if previous_commit is None:  # the first commit: nothing to compare with
        table[["changed", "new_here", "gone_here"]] = False
        table[[f"{m.column}_change" for m in static_metrics.METRICS]] = np.nan
    table = table[_selected(table, kernel, dtype)]
    if changed_only:
        table = table[table["changed"]]
    # what moved first, then configs that came (or went) at this commit, then the rest
    rank = np.where(table["changed"] & ~table["new_here"] & ~table["gone_here"], 0,
                    np.where(table["new_here"] | table["gone_here"], 1, 2))
    return (table.assign(_rank=rank).sort_values(["_rank", *static_metrics.ROW_KEY]).drop(columns="_rank")
            .reset_index(drop=True))


def _table_columns() -> list[dict]:
    change = Format(sign=Sign.positive)
    columns = [{"name": ["", c], "id": c} for c in static_metrics.ROW_KEY]
    for m in static_metrics.METRICS:
        title = {"registers": "registers", "spill_bytes": "spills", "shared_bytes": "shared memory",
                 "sass_instructions": "SASS"}[m.column]
        unit = f" ({m.shown_unit})" if m.shown_unit in ("B", "KiB") else ""
        columns += [{"name": [title, f"value{unit}"], "id": m.column, "type": "numeric"},
                    {"name": [title, "Δ"], "id": f"{m.column}_change", "type": "numeric", "format": change}]
    return columns + [{"name": ["", "note"], "id": "note"}]


def table_records(table: pd.DataFrame) -> list[dict]:
    """Rows for the DataTable: each metric in its shown unit, a note for configs that came, went or
    did not compile."""
    out = table.copy()
    for m in static_metrics.METRICS:
        for col in (m.column, f"{m.column}_change"):
            out[col] = m.shown(out[col]).round(1)
    out["note"] = np.where(out["new_here"], "new at this commit",
                           np.where(out["gone_here"], "gone at this commit", out["problem"].fillna("")))
    keep = [c["id"] for c in _table_columns()]
    out = out[keep].astype(object)
    return out.where(out.notna(), None).to_dict("records")


def summary(table: pd.DataFrame, run: Run, commit: str) -> html.P:
    previous = run.previous_commit(commit)
    if previous is None:
        return html.P(f"{len(table)} kernel configs at {commit[:8]}, the first commit of this history.",
                      id="kernels-summary")
    worse = sum((table[f"{m.column}_change"] > 0).sum() for m in static_metrics.METRICS)
    better = sum((table[f"{m.column}_change"] < 0).sum() for m in static_metrics.METRICS)
    came, went = int(table["new_here"].sum()), int(table["gone_here"].sum())
    return html.P([f"{len(table)} kernel configs at {commit[:8]}; since {previous[:8]}: ",
                   html.Span(f"{worse} value(s) up", className="bad" if worse else None), ", ",
                   html.Span(f"{better} down", className="good" if better else None),
                   f", {came} config(s) new, {went} gone. Up is worse for every column."], id="kernels-summary")


def datatable() -> dash_table.DataTable:
    styles = []
    for m in static_metrics.METRICS:
        col = f"{m.column}_change"
        styles += [{"if": {"filter_query": f"{{{col}}} > 0", "column_id": [col, m.column]}, **WORSE_CELL},
                   {"if": {"filter_query": f"{{{col}}} < 0", "column_id": [col, m.column]}, **BETTER_CELL}]
    styles.append({"if": {"filter_query": "{spill_bytes} > 0", "column_id": "spill_bytes"}, **WORSE_CELL})
    return styled_datatable("kernels-table", _table_columns(), styles, page_size=30, merge_duplicate_headers=True,
                            wrap=("kernel", "variant", "config", "note"))


def intro(data: DashboardData, run: Run) -> html.P:
    identity = data.machine_identity(run.machine)
    triton = f" with Triton {identity['triton']}" if "triton" in identity else ""
    arch = static_metrics.arch_of_machine(run.machine) or "sm_90"
    return html.P([
        html.B("Static compile metrics, not timings. "),
        f"Every kernel config the autotuner is offered on {arch}, compiled for it{triton} without a GPU by the "
        "compile check (", html.Code("python -m fused_mlp.aot"), "), as ", html.Code("asv run"),
        " recorded it per commit (", html.Code("benchmarks/bench_compile.py"), "). A value moves only when a "
        "kernel, its configs or the compiler change; lower is better for each. Spills and a smaller tile's "
        "missing tensor-core instructions are what the compile check refuses."], className="hint",
        id="kernels-intro")


def layout(data: DashboardData, query: Query):
    machines = sorted({m for m, _ in data.static_runs})
    machine = query.one("machine", None, allowed=machines) if machines else None
    run = data.static_run(machine)
    if run is None:
        return html.Div([html.H1("Kernels"), message(
            "No static compile metrics in these results. `python -m benchmarks.run --machine NAME -b "
            "KernelResources` records them on any machine (no GPU needed).")])
    kernels, dtypes = kernel_names(run), dtypes_of(run)
    configs = config_choices(data)
    default_config = next((c for c in configs if c.startswith("linear_act/tile 128x128x64 w8")), configs[0] if configs else None)
    return html.Div([
        html.H1("Kernels"),
        intro(data, run),
        html.Div([
            labelled("Machine", dropdown(ID, "machine", [{"label": m, "value": m} for m in machines], run.machine,
                                         clearable=False), "21rem"),
            labelled("Commit", dropdown(ID, "commit", commit_options(run), commit_of(run, query, "commit"),
                                        clearable=False), "15rem"),
            labelled("Kernel", dropdown(ID, "kernel", [{"label": "all", "value": ALL}]
                                        + [{"label": k, "value": k} for k in kernels],
                                        query.one("kernel", ALL, allowed=[ALL, *kernels]), clearable=False), "16rem"),
            labelled("dtype", dropdown(ID, "dtype", [{"label": "all", "value": ALL}]
                                       + [{"label": d, "value": d} for d in dtypes],
                                       query.one("dtype", ALL, allowed=[ALL, *dtypes]), clearable=False), "8rem"),
            labelled("Show", dcc.Checklist(id=qid(ID, "changed"), options=[
                {"label": " only what changed since the commit before", "value": "only"}],
                value=query.many("changed", allowed=("only",)), inline=True), "22rem"),
        ], className="controls"),
        html.Div(id="kernels-summary-box"),
        datatable(),
        html.H2("History"),
        html.Div([labelled("Metric", dropdown(ID, "metric", [{"label": m.label, "value": m.key}
                                                             for m in static_metrics.METRICS],
                                              query.one("metric", METRIC_KEYS[0], allowed=METRIC_KEYS),
                                              clearable=False), "16rem")], className="controls"),
        html.Div(id="kernels-lines-note", className="hint"),
        graph(ID, "figure"),
        html.H2("Across architectures"),
        html.P("One config on every architecture's compile-metrics machine, each at its newest commit that compiled "
               "it (the dtype above; bf16 for all). A spill on one of them is a finding on its machine like any "
               "other.", className="hint"),
        html.Div([labelled("Config", dropdown(ID, "config", [{"label": c, "value": c} for c in configs],
                                              query.one("config", default_config, allowed=configs) if configs else None,
                                              clearable=False), "26rem")], className="controls"),
        styled_datatable("kernels-arch-table", [], [
            {"if": {"filter_query": f'{{what}} contains "Spill" && {{{arch}}} > 0', "column_id": arch}, **WORSE_CELL}
            for arch in static_metrics.ARCH_DEVICES], page_size=10),
    ])


def config_choices(data: DashboardData) -> list[str]:
    """'kernel/variant family' of every config some compile-metrics machine compiled, e.g.
    'linear_act/tile 128x128x64 w8' (stages and AMD knobs are each backend's form of it)."""
    found = set()
    for run in data.static_runs.values():
        s = run.series
        found |= {f"{k}/{v} {static_metrics.config_family(c)}" for k, v, c in zip(s["kernel"], s["variant"], s["config"])}
    return sorted(found)


def _newest_with(run: Run, kernel: str, variant: str, family: str, dtype: str) -> pd.DataFrame:
    """resources_at of the newest commit of `run` that compiled the config (empty if none did)."""
    fields = run.series[["metric", *static_metrics.ROW_KEY]]
    for commit in reversed(run.commits["commit_hash"].tolist()):
        table = static_metrics.resources_at(run.at_commit(commit, samples=False), fields)
        hit = ((table["kernel"] == kernel) & (table["variant"] == variant) & (table["dtype"] == dtype)
               & (table["config"].map(static_metrics.config_family) == family))
        if hit.any():
            return table[hit]
    return pd.DataFrame(columns=[*static_metrics.ROW_KEY])


def across_architectures(data: DashboardData, choice: str | None, dtype: str | None) -> tuple[list[dict], list[dict]]:
    """(records, columns) of the side-by-side table: a row per metric, a column per architecture."""
    if not choice:
        return [], []
    head, _, family = choice.partition(" ")
    kernel, _, variant = head.partition("/")
    dtype = dtype if dtype and dtype != ALL else "bf16"
    newest = {machine: _newest_with(run, kernel, variant, family, dtype) for (machine, _), run in data.static_runs.items()}
    table = static_metrics.across_machines(newest, kernel, variant, family, dtype)
    columns = [{"name": "", "id": "what"}] + [{"name": c, "id": static_metrics.column_id(c)} for c in table.columns]
    records = [{"what": f"{what} ({_unit_of(what)})" if _unit_of(what) else what,
                **{static_metrics.column_id(c): (v if isinstance(v, str) else None if pd.isna(v) else round(float(v), 1))
                   for c, v in row.items()}} for what, row in table.iterrows()]
    return records, columns


def _unit_of(label: str) -> str:
    metric = next((m for m in static_metrics.METRICS if m.label == label), None)
    return metric.shown_unit if metric is not None and metric.shown_unit in ("B", "KiB") else ""


def update_table(data: DashboardData, machine, commit, kernel, dtype, changed):
    run = data.static_run(machine)
    if run is None or not commit:
        return [], message("Pick a commit.")
    table = resources_table(run, commit, kernel, dtype, "only" in (changed or []))
    rows = run.at_commit(commit, samples=False)  # why what is n/a there is (a commit without the arch)
    rows = rows[rows["series"].isin(run.series.index[_selected(run.series, kernel, dtype)])]
    return table_records(table), [summary(table, run, commit), *why_na_line(data, run, rows, [commit], "kernels-why-na")]


def update_figure(data: DashboardData, machine, commit, kernel, dtype, metric_key, theme="light"):
    """(figure, note): one static metric over the commits, a line per config x dtype shown."""
    run = data.static_run(machine)
    metric = static_metrics.METRIC_OF_KEY.get(metric_key or METRIC_KEYS[0])
    if run is None or metric is None:
        return error_figure(lambda: theme)("Pick a machine and a metric."), ""
    series = run.series[(run.series["metric"] == metric.key) & _selected(run.series, kernel, dtype)]
    if series.empty:
        return error_figure(lambda: theme)("No kernel config matches."), ""
    rows = run.of_series(series.index, samples=False)
    measured = rows[rows["status"].astype(str) != "skipped"]["series"].unique()
    series = series.loc[series.index.isin(measured)] if len(measured) else series
    note = ""
    if len(series) > MAX_LINES:
        note = (f"Showing {MAX_LINES} of {len(series)} kernel configs; pick a kernel and a dtype to see the "
                "others (the table above has them all).")
        series = series.iloc[:MAX_LINES]
    labels = series["kernel"] + "/" + series["variant"] + " " + series["config"] + " " + series["dtype"]
    rows = rows[rows["series"].isin(series.index)].merge(run.commits[["commit_hash", "position"]],
                                                          on="commit_hash", how="left")
    rows["line"] = rows["series"].map(labels)
    rows["y"] = metric.shown(rows["value"])
    rows["y_lo"] = rows["y_hi"] = np.nan  # the compiler's numbers are exact: no band
    measure = Measure(metric.label, metric.shown_unit, "lower")
    figure = build_trend_figure(rows, measure, None, commit or None, "commit", False, theme,
                                title=f"{metric.label} — static, {run.machine}")
    return figure, note


def register(app, store: ResultsStore):
    selected = ("machine", "commit", "kernel", "dtype")  # the table's and the figure's first parameters

    @app.callback(Output(qid(ID, "commit"), "options"), Output(qid(ID, "commit"), "value"),
                  Input(qid(ID, "machine"), "value"), State(qid(ID, "commit"), "value"), prevent_initial_call=True)
    @guarded(lambda t: [], lambda t: None)
    def _commits(machine, current):
        run = store.get().static_run(machine)
        return commit_options(run), resolve_commit(run, current)

    @app.callback(Output("kernels-table", "data"), Output("kernels-summary-box", "children"),
                  inputs=named_values(ID, (*selected, "changed")))
    @guarded(lambda t: [], message)
    def _table(**named):  # update_table's parameters by name
        return update_table(store.get(), **named)

    @app.callback(Output("kernels-arch-table", "data"), Output("kernels-arch-table", "columns"),
                  Input(qid(ID, "config"), "value"), Input(qid(ID, "dtype"), "value"))
    @guarded(lambda t: [], lambda t: [])
    def _across(choice, dtype):
        return across_architectures(store.get(), choice, dtype)

    @app.callback(Output(f"{ID}-figure", "figure"), Output("kernels-lines-note", "children"),
                  inputs=dict(named_values(ID, selected), metric_key=Input(qid(ID, "metric"), "value"),
                              theme=Input(qid(SHELL, "theme"), "value")))
    @guarded(error_figure(), lambda t: "")
    def _figure(**named):  # update_figure's parameters by name
        return update_figure(store.get(), **named)


PAGE = Page("/kernels", "Kernels", 6, layout, register, "static compile metrics per kernel config, per commit")
