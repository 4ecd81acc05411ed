"""Regressions: the detector's findings as an inbox grouped by commit, newest first; each finding
links to the Trends view of its series with the change marked.

Detection over every series runs once per results set in a worker process (model.ResultsStore);
this page polls until it is done.
"""

from __future__ import annotations

from dash import Input, Output, dcc, html

from dashboard import metrics
from dashboard.components import dropdown, guarded, labelled, message
from dashboard.model import DashboardData, FindingsState, ResultsStore
from dashboard.pages import Page
from dashboard.urlstate import SHELL, Query, link, qid

ID = "regressions"
MAX_GROUPS = 40  # commit groups rendered at once; the rest are counted
DIRECTIONS = {"regression": "regressions", "all": "regressions and improvements"}


def layout(data: DashboardData, query: Query):
    machines = data.machine_names()
    return html.Div([
        html.H1("Regressions"),
        html.Div([
            labelled("Machine", dropdown(ID, "machine", machines, query.one("machine", allowed=machines),
                                         clearable=True, placeholder="all machines")),
            labelled("Show", dropdown(ID, "direction", [{"label": v, "value": k} for k, v in DIRECTIONS.items()],
                                      query.one("direction", "regression", allowed=DIRECTIONS), clearable=False),
                     "18rem"),
            labelled("Only", dcc.Checklist(id=qid(ID, "only"), options=[
                {"label": " confirmed", "value": "confirmed"}, {"label": " still present", "value": "present"}],
                value=query.many("only", allowed=("confirmed", "present")), inline=True), "16rem"),
        ], className="controls"),
        dcc.Interval(id="regressions-poll", interval=1500, disabled=False),
        html.Div(id="regressions-inbox"),
    ])


def _fmt(value: float, unit) -> str:
    suffix = {"seconds": "s", "bytes": "B"}.get(unit, "")
    for prefix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1), ("m", 1e-3), ("µ", 1e-6), ("n", 1e-9)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{suffix}".strip()
    return f"{value:.3g} {suffix}".strip()


def inbox(data: DashboardData, state: FindingsState, machine, direction, only, theme="light"):
    """(inbox children, polling disabled?)."""
    if state.status == "running":
        return message("Finding changes in every series… (started with this results set; this page updates by "
                       "itself)"), False
    if state.status == "failed":
        return message(f"The regression detector failed: {state.error}", "error"), True
    findings = [f for f in state.findings or []
                if (not machine or f.machine == machine)
                and (direction == "all" or f.direction == "regression")
                and ("confirmed" not in (only or []) or f.confirmed)
                and ("present" not in (only or []) or f.present_at_newest)]
    if not findings:
        return message(f"No {DIRECTIONS.get(direction, 'changes')} found"
                       f"{' on ' + machine if machine else ''} ({state.seconds or 0:.1f} s to analyse)."), True
    groups: dict[tuple, list] = {}
    for f in findings:  # newest first already
        groups.setdefault((f.commit_hash, f.machine, f.env_name), []).append(f)
    children = [html.P(f"{len(findings)} finding(s) at {len(groups)} commit(s); analysed in "
                       f"{state.seconds or 0:.1f} s.", id="regressions-count")]
    for (commit, mach, env), members in list(groups.items())[:MAX_GROUPS]:
        children.append(_group(data, commit, mach, env, members, theme))
    if len(groups) > MAX_GROUPS:
        children.append(html.P(f"… and {len(groups) - MAX_GROUPS} older commit(s); narrow the filters.",
                               className="hint"))
    return children, True


def _group(data: DashboardData, commit, machine, env, members, theme):
    n_reg = sum(f.direction == "regression" for f in members)
    url = data.commit_link(commit)
    run = data.runs.get((machine, env))
    header = [html.B(commit[:10]), f" · {members[0].commit_date:%Y-%m-%d %H:%M} · {machine} / {env} · ",
              f"{len(members)} series affected ({n_reg} regression(s), {len(members) - n_reg} improvement(s))"]
    if url:
        header += [" · ", html.A("commit ↗", href=url, target="_blank")]
    items = []
    for f in sorted(members, key=lambda f: (f.direction != "regression", -abs(f.relative_change))):
        case, impl = run.series_of_params.get((f.benchmark, f.params), (None, None)) if run else (None, None)
        metric = metrics.stored_metric_of(f.benchmark) or "latency"
        href = link("/trends", {"machine": machine, "env": env, "case": case, "metric": metric,
                                "commit": commit, "theme": theme})
        items.append(html.Li([
            html.Span(f.direction, className=f"badge {'bad' if f.direction == 'regression' else 'good'}"),
            f" {metric} ", html.Code(case or f.params), f" [{impl or '?'}] ",
            f"{_fmt(f.before, f.unit)} → {_fmt(f.after, f.unit)} ({f.relative_change:+.1%}, p={f.p_value:.1g}; "
            f"{f.status()}) ",
            dcc.Link("trend →", href=href, className="trend-link"),
        ]))
    return html.Div([html.Div(header, className="group-header"), html.Ul(items)], className="card inbox-group")


def register(app, store: ResultsStore):
    @app.callback(Output("regressions-inbox", "children"), Output("regressions-poll", "disabled"),
                  Input("regressions-poll", "n_intervals"), Input(qid(ID, "machine"), "value"),
                  Input(qid(ID, "direction"), "value"), Input(qid(ID, "only"), "value"),
                  Input(qid(SHELL, "theme"), "value"))
    @guarded(lambda t: message(t, "error"), lambda t: True)
    def _update(_, machine, direction, only, theme):
        return inbox(store.get(), store.findings(), machine, direction, only, theme)


PAGE = Page("/regressions", "Regressions", 4, layout, register, "changes found by the detector, per commit")
