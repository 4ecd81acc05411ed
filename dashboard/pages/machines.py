"""Machines: one machine against another (an H100 runner against an H200 one, say) at their
newest common commit, or any commit of each: every case's latency on both, the ratio, and each
value as a fraction of its own machine's roofline floor (from the ceilings measured in that
run), so a difference the hardware explains reads as such; each machine's ceilings beside."""

from __future__ import annotations

import numpy as np
import pandas as pd
from dash import Input, Output, State, html

from dashboard.data import derived_metrics, device_ceilings, metrics, speedup_tables
from dashboard.ui.callback_guards import guarded
from dashboard.ui.commit_choice import commit_options, named_commit
from dashboard.ui.notices import message
from dashboard.ui.run_selector import env_options, machine_options, register_run_controls, run_of
from dashboard.ui.widgets import dropdown, labelled, named_values, styled_datatable
from dashboard.data.dashboard_data import SUITE, DashboardData
from dashboard.store.model import ResultsStore
from dashboard.data.run_view import Run
from dashboard.pages import Page
from asv_results.units import display_unit
from dashboard.data.urlstate import Query, qid

ID = "machines"
KEYS = ("op", "dtype", "activation", "shape", "impl", "mode")
COLUMNS = [*KEYS, "a", "b", "ratio", "a_roofline", "b_roofline"]


def newest_common(a: Run | None, b: Run | None) -> str | None:
    """The newest commit (in A's order) that both runs measured, or None."""
    if a is None or b is None:
        return None
    theirs = set(b.commits["commit_hash"])
    return next((h for h in reversed(a.commits["commit_hash"].tolist()) if h in theirs), None)


def _commit(run: Run | None, wanted, fallback: str | None) -> str | None:
    """The commit ``wanted`` names in the run, else ``fallback`` if the run has it, else its newest."""
    hashes = run.commits["commit_hash"].tolist() if run is not None else []
    return named_commit(run, wanted) or (fallback if fallback in hashes else (hashes[-1] if hashes else None))


def _other_run(data: DashboardData, run: Run | None, machine, env, query: Query | None = None) -> Run | None:
    """B: the machine asked for, else the first other machine than A's (a link's machine_b that
    the results do not have is noted in ``query``, so the page says so, as every page does)."""
    if machine in data.machine_names():
        return data.run(machine, env)
    if machine is not None and query is not None:
        query.reject("machine_b", machine)
    others = [m for m in data.machine_names() if run is None or m != run.machine]
    return data.run(others[0], None) if others else run


def layout(data: DashboardData, query: Query):
    run_a = run_of(data, query)
    run_b = _other_run(data, run_a, query.one("machine_b"), query.one("env_b"), query)
    common = newest_common(run_a, run_b)
    a = _commit(run_a, query.one("a"), common)
    b = _commit(run_b, query.one("b"), common)
    machines = machine_options(data, data.machine_names())
    return html.Div([
        html.H1("Machine against machine"),
        html.Div([
            labelled("Machine A", dropdown(ID, "machine", machines, run_a.machine if run_a else None, clearable=False),
                     "19rem"),
            labelled("Environment A", dropdown(ID, "env", env_options(data, run_a.machine) if run_a else [],
                                               run_a.env_name if run_a else None, clearable=False), "17rem"),
            labelled("Commit A", dropdown(ID, "a", commit_options(run_a), a, clearable=False), "15rem"),
        ], className="controls"),
        html.Div([
            labelled("Machine B", dropdown(ID, "machine_b", machines, run_b.machine if run_b else None,
                                           clearable=False), "19rem"),
            labelled("Environment B", dropdown(ID, "env_b", env_options(data, run_b.machine) if run_b else [],
                                               run_b.env_name if run_b else None, clearable=False), "17rem"),
            labelled("Commit B", dropdown(ID, "b", commit_options(run_b), b, clearable=False), "15rem"),
            labelled("Mode", dropdown(ID, "mode", list(metrics.MODES), query.many("mode", allowed=metrics.MODES),
                                      multi=True, placeholder="all"), "13rem"),
        ], className="controls"),
        html.P("Ratio = latency on B / latency on A (same case, implementation and mode). Roofline = that "
               "machine's floor (the cost model against the ceilings measured in that run) / the latency: 1 is "
               "at the roof; a ratio the two roofline fractions share is the hardware's. Forward mode only for "
               "the roofline (the cost model counts a forward). Opens on the newest commit both measured.",
               className="hint"),
        html.Div(id="machines-summary"),
        styled_datatable("machines-table", _columns(), [], wrap=("shape", "activation", "impl")),
        html.Div(id="machines-ceilings", className="cards"),
    ])


def _columns(shown=None) -> list[dict]:
    from dash.dash_table.Format import Format, Scheme

    names = {"a": "A", "b": "B", "ratio": "B / A", "a_roofline": "A roofline", "b_roofline": "B roofline"}
    out = []
    for c in COLUMNS:
        col = {"name": names.get(c, c), "id": c}
        if c in ("a", "b"):
            col.update(type="numeric", format=Format(precision=4, scheme=Scheme.decimal),
                       name=shown.title(names[c]) if shown is not None else names[c])
        elif c in ("ratio", "a_roofline", "b_roofline"):
            col.update(type="numeric", format=Format(precision=3, scheme=Scheme.fixed))
        out.append(col)
    return out


def machine_table(data: DashboardData, run_a: Run | None, a, run_b: Run | None, b, modes=None) -> pd.DataFrame:
    """Every case x impl x mode with a latency on both: A, B (seconds), ratio B/A and each one's
    roofline fraction against its own run's ceilings."""
    if run_a is None or run_b is None or not a or not b:
        return pd.DataFrame(columns=[*COLUMNS, "case"])
    sides = []
    for run, commit in ((run_a, a), (run_b, b)):
        rows = run.at_commit(commit, samples=False)
        rows = rows[(rows["metric"] == "latency") & (rows["status"] == "ok")]
        if modes:
            rows = rows[rows["mode"].astype(str).isin(modes)]
        rows = rows.assign(roofline=derived_metrics.derive(rows, "roofline", data.ceilings)["y"].to_numpy())
        sides.append(rows[["case", *KEYS, "value", "roofline"]].astype({k: str for k in ("case", *KEYS)}))
    both = sides[0].merge(sides[1], on=["case", *KEYS], suffixes=("_a", "_b"))
    out = both[["case", *KEYS]].copy()
    out["a"], out["b"] = both["value_a"].to_numpy(), both["value_b"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        out["ratio"] = out["b"] / out["a"]
    out["a_roofline"], out["b_roofline"] = both["roofline_a"].to_numpy(), both["roofline_b"].to_numpy()
    return out.sort_values(["op", "dtype", "mode", "shape", "impl"]).reset_index(drop=True)


def _ceilings_card(data: DashboardData, run: Run, commit: str, side: str):
    ceil = device_ceilings.ceilings_of(data.ceilings, run.machine, run.env_name, commit)
    identity = data.machine_identity(run.machine)
    items = [html.Li([html.B("gpu: "), identity["gpu"]])] if "gpu" in identity else []
    if ceil is None:
        items.append(html.Li("no ceilings measured in this run"))
    else:
        items.append(html.Li([html.B("copy: "), f"{ceil.copy_gbps:,.0f} GB/s"]))
        items += [html.Li([html.B(f"matmul {d}: "), f"{t:,.3g} TFLOP/s"]) for d, t in sorted(ceil.matmul_tflops.items())]
    return html.Div([html.H3(f"{side}: {run.machine} at {commit[:8]}"), html.Ul(items, className="kv")],
                    className="card", id=f"machines-ceilings-{side.lower()}")


def update(data: DashboardData, machine, env, a, machine_b, env_b, b, mode=None):
    """(table rows, columns, summary, ceilings cards)."""
    run_a, run_b = data.run(machine, env), data.run(machine_b, env_b)
    table = machine_table(data, run_a, a, run_b, b, mode)
    if run_a is None or run_b is None or not a or not b:
        return [], _columns(), message("Pick two machines and a commit of each."), []
    shown = display_unit("seconds", table[["a", "b"]].to_numpy(dtype=float))
    rows = table.assign(a=shown(table["a"]), b=shown(table["b"]))
    summary = html.P([f"{run_a.machine} at {a[:8]} against {run_b.machine} at {b[:8]}"
                      + (" (the same commit)" if a == b else " (different commits: the code differs too)")
                      + f": {len(table)} case × implementation × mode measured on both; geometric-mean B / A "
                      f"{speedup_tables.geomean(table['ratio']):.3g}."], id="machines-summary-text")
    cards = [_ceilings_card(data, run_a, a, "A"), _ceilings_card(data, run_b, b, "B")]
    return rows.astype(object).where(rows.notna(), None).to_dict("records"), _columns(shown), summary, cards


def register(app, store: ResultsStore):
    register_run_controls(app, store, ID, {"a": 0})

    @app.callback(Output(qid(ID, "env_b"), "options"), Output(qid(ID, "env_b"), "value"),
                  Output(qid(ID, "b"), "options"), Output(qid(ID, "b"), "value"),
                  Input(qid(ID, "machine_b"), "value"), Input(qid(ID, "env_b"), "value"), State(qid(ID, "b"), "value"),
                  prevent_initial_call=True)
    @guarded(lambda t: [], lambda t: None, lambda t: [], lambda t: None)
    def _b_controls(machine, env, current):
        data = store.get()
        envs = data.envs_of(machine) if machine else []
        env = env if env in envs else (envs[0] if envs else None)
        run = data.run(machine, env)
        return env_options(data, machine), env, commit_options(run), _commit(run, current, None)

    @app.callback(Output("machines-table", "data"), Output("machines-table", "columns"),
                  Output("machines-summary", "children"), Output("machines-ceilings", "children"),
                  inputs=named_values(ID, ("machine", "env", "a", "machine_b", "env_b", "b", "mode")))
    @guarded(lambda t: [], lambda t: _columns(), message, lambda t: [])
    def _update(**named):  # update's parameters by name
        return update(store.get(), **named)


PAGE = Page("/machines", "Machines", 2, layout, register, "one machine against another, at a common commit",
            modes=(SUITE,))
