"""Regressions: first the gate's verdict on the newest commit (pass / fail, the findings that fail
it with the gate's reason, class and evidence), then the detector's findings as an inbox grouped
by commit, newest first: level changes, and series that started failing (ok -> failed) or
stopped (failed -> ok); each finding links to the Trends view of its series with the change
marked. Every class, evidence and acceptance is the gate's (regressions.gate_view: the gate's own
report, kept by the detector's worker); this page judges nothing itself.

Detection over every series runs once per results set in a worker process (model.ResultsStore);
this page polls until it is done.
"""

from __future__ import annotations

import json

from dash import MATCH, Input, Output, dcc, html, no_update

from dashboard.data import metrics, static_metrics

from asv_results import commit_messages
from dashboard.ui.callback_guards import guarded
from dashboard.ui.notices import message, whole_folder_note
from dashboard.ui.widgets import dropdown, labelled, named_values
from dashboard.data.dashboard_data import DashboardData
from dashboard.store.detection import FindingsState
from regressions.acceptance import PLACEHOLDERS
from regressions.gate_view import FAILING_CLASS, GateView, change_key, class_of
from regressions.gate_records import machine_record
from dashboard.store.model import ResultsStore
from dashboard.pages import Page
from regressions.formatting import format_p
from asv_results.units import format_change, format_value  # the pages' one number and change format
from dashboard.data.urlstate import SHELL, Query, link, qid

ID = "regressions"
STATUS_KIND = "status"  # regressions.failures.StatusChange.kind
PAGE_FINDINGS = 30  # findings rendered per page of the inbox (the gate's failing ones are above, on every page)
OPEN_GROUPS = 3  # the newest commits' groups are open; older ones collapsed (click to open)
ACCEPT = "regressions-accept"  # the "accept…" button of a finding; its entry is built when clicked
DIRECTIONS = {"regression": "regressions", "all": "regressions and improvements"}
ONLY = {"confirmed": " confirmed", "present": " still present", "open": " open (not accepted)"}
ACCEPTED_STYLE = {"background": "var(--muted)", "color": "var(--panel)"}


def layout(data: DashboardData, query: Query):
    machines = sorted({*data.machine_names(), *(m for m, _ in data.static_runs)})  # static metrics are judged too
    return html.Div([
        html.H1("Regressions"),
        html.Div([
            labelled("Machine", dropdown(ID, "machine", machines, query.one("machine", allowed=machines),
                                         clearable=True, placeholder="all machines")),
            labelled("Show", dropdown(ID, "direction", [{"label": v, "value": k} for k, v in DIRECTIONS.items()],
                                      query.one("direction", "regression", allowed=DIRECTIONS), clearable=False),
                     "18rem"),
            labelled("Only", dcc.Checklist(id=qid(ID, "only"), options=[
                {"label": label, "value": value} for value, label in ONLY.items()],
                value=query.many("only", allowed=tuple(ONLY)), inline=True), "30rem"),
            labelled("Search", dcc.Input(id=qid(ID, "q"), type="search", value=query.one("q", ""), debounce=True,
                                         placeholder="benchmark, case, parameter…", className="search"), "18rem"),
            labelled("Page", dcc.Input(id=qid(ID, "page"), type="number", min=1, step=1,
                                       value=_page_number(query.one("page", "1")), debounce=True), "6rem"),
        ], className="controls"),
        dcc.Interval(id="regressions-poll", interval=1500, disabled=False),
        html.Div(id="regressions-inbox"),
    ])


def acceptances(view: GateView, findings) -> dict[int, str]:
    """{id(finding): the gate's words for the accepted.json entry accepting it}: the gate's
    acceptance, never matched again here."""
    return {id(f): label for f in findings if (label := view.acceptance_label(f))}


def _matches(f, words: list[str]) -> bool:
    text = f"{f.benchmark} {f.params} {f.commit_hash}".lower()
    return all(w in text for w in words)


def _page_number(value) -> int:
    try:
        return max(1, int(float(value)))
    except (TypeError, ValueError, OverflowError):
        return 1


def inbox(data: DashboardData, state: FindingsState, machine, direction, only, theme="light", search=None, page=1,
          machine_record=None):
    """(inbox children, polling disabled?). ``search``: words every finding shown contains (in its
    benchmark, parameters or commit), case-insensitive. ``page``: which PAGE_FINDINGS findings
    (newest first); the gate's verdict and its failing findings head every page.
    ``machine_record(machine, why)``: the gate's record with ``--machine`` (gate_records.machine_record),
    shown for the chosen machine when the gate over every machine cannot judge (``why``)."""
    if state.status == "running":
        return message("Finding changes in every series… (started with this results set; this page updates by "
                       "itself)"), False
    if state.status == "failed":
        return message(f"The regression detector failed: {state.error}", "error"), True
    only = only or []
    view = GateView(state.verdict)
    if machine and view.error and machine_record is not None:
        view = GateView(machine_record(machine, view.error))
    accepted = acceptances(view, state.findings or [])
    findings = [f for f in state.findings or []
                if (not machine or f.machine == machine)
                and (direction == "all" or f.direction == "regression")
                and ("confirmed" not in only or getattr(f, "confirmed", True))  # a status change is definite
                and ("present" not in only or f.present_at_newest)
                and ("open" not in only or id(f) not in accepted)
                and _matches(f, str(search or "").lower().split())]
    warning = [verdict_panel(data, view, state.findings or [], machine, theme)]
    if not findings:
        return warning + [message(f"No {DIRECTIONS.get(direction, 'changes')} found"
                                  f"{' on ' + machine if machine else ''} ({state.seconds or 0:.1f} s to analyse).")], True
    n_groups = len({(f.commit_hash, f.machine, f.env_name) for f in findings})
    n_pages = -(-len(findings) // PAGE_FINDINGS)
    page = min(_page_number(page), n_pages)
    shown = findings[(page - 1) * PAGE_FINDINGS:page * PAGE_FINDINGS]  # newest first already
    groups: dict[tuple, list] = {}
    for f in shown:
        groups.setdefault((f.commit_hash, f.machine, f.env_name), []).append(f)
    n_accepted = sum(id(f) in accepted for f in findings)
    n_open = sum(f.direction == "regression" for f in findings) - n_accepted
    children = warning + [html.P(f"{len(findings)} finding(s) at {n_groups} commit(s): {n_open} open "
                                 f"regression(s), {n_accepted} accepted in accepted.json; analysed in "
                                 f"{state.seconds or 0:.1f} s. Change = the level after / the level before − 1, "
                                 "the detector's levels over the commits either side (Compare and the Overview: "
                                 "one commit against another).", id="regressions-count")]
    pager = html.P(f"Findings {(page - 1) * PAGE_FINDINGS + 1}–{(page - 1) * PAGE_FINDINGS + len(shown)} of "
                   f"{len(findings)}, newest first: page {page} of {n_pages}"
                   + (" (the Page box above turns to older ones)." if n_pages > 1 else "."),
                   className="hint", id="regressions-pager")
    children.append(pager)
    for i, ((commit, mach, env), members) in enumerate(groups.items()):
        children.append(_group(data, commit, mach, env, members, theme, accepted, view,
                               open_=page == 1 and i < OPEN_GROUPS))
    return children, True


def acceptance_entry(f) -> dict:
    """The results/accepted.json entry that accepts this finding (and no later change): what the
    page offers to copy. The app never writes results/: a person commits it, with who and why."""
    return {"benchmark": f.benchmark, "params": f.params, "machine": f.machine, "commit": f.commit_hash[:12],
            **PLACEHOLDERS}  # what a person replaces (the gate refuses the entry until then)


def offer_key(f) -> str:
    """A short name of one finding, for its "accept…" button's id: its accepted.json entry, its
    environment and its kind (the entry names neither, and two environments on one machine, or a
    level change and a status change of one series, would share a button id)."""
    import hashlib

    named = {**acceptance_entry(f), "env_name": f.env_name, "kind": f.kind}
    return hashlib.sha256(json.dumps(named, sort_keys=True).encode()).hexdigest()[:16]


def _accept_offer(f) -> list:
    """The "accept…" button; the entry (a few elements more) is built when it is clicked."""
    key = offer_key(f)
    return [html.Button("accept…", id={"type": ACCEPT, "index": key}, className="accept-summary", n_clicks=0),
            html.Div(id={"type": f"{ACCEPT}-entry", "index": key}, className="accept")]


def accept_box(findings, key: str) -> list:
    """What "accept…" opens for the finding whose offer_key is ``key``: the entry to add to
    results/accepted.json, with a copy button."""
    f = next((f for f in findings or [] if offer_key(f) == key), None)
    if f is None:
        return [message("This finding is no longer in the results; reload the page.")]
    text = json.dumps(acceptance_entry(f), indent=2)
    return [html.P(["Add this entry to the ", html.Code('"accepted"'), " list of ", html.Code("results/accepted.json"),
                    " (fill in who and why: the gate refuses the placeholders) and commit it; the gate and this "
                    "page then show it as accepted. The dashboard never writes into results/."], className="hint"),
            html.Div([html.Pre(text, className="accept-entry"),
                      dcc.Clipboard(content=text, title="copy the entry", className="accept-copy")],
                     className="accept-box")]


def _kernel_filter(data: DashboardData, machine, env, f) -> dict:
    """The Kernels page's filters that show a static finding's config: its kernel and dtype, and
    only what changed (changed rows first)."""
    run = data.static_runs.get((machine, env))
    mine = run.series[(run.series["benchmark"] == f.benchmark) & (run.series["params_key"] == f.params)] \
        if run is not None else None
    if mine is None or mine.empty:
        return {"changed": ["only"]}
    row = mine.iloc[0]
    kernel = f"{row['kernel']}/{row['variant']}" if row["variant"] else row["kernel"]  # the page's kernel key
    return {"kernel": kernel, "dtype": row["dtype"] or None, "changed": ["only"]}


def _size(f) -> float:
    """How large a finding is, for ordering: a series that started failing before any level change."""
    return float("inf") if f.kind == STATUS_KIND else abs(f.relative_change)


def _group(data: DashboardData, commit, machine, env, members, theme, accepted, view, open_=True):
    n_accepted = sum(id(f) in accepted for f in members)
    n_reg = sum(f.direction == "regression" for f in members) - n_accepted
    url = data.commit_link(commit)
    run = data.runs.get((machine, env))
    n_failing = sum(f.kind == STATUS_KIND and f.direction == "regression" and id(f) not in accepted for f in members)
    counts = [f"{n_reg} regression(s)" + (f" of which {n_failing} started failing" if n_failing else ""),
              f"{n_accepted} accepted" if n_accepted else "", f"{len(members) - n_reg - n_accepted} improvement(s)"]
    header = [html.B(commit[:10]), f" · {members[0].commit_date:%Y-%m-%d %H:%M} · {machine} / {env} · ",
              f"{len(members)} series affected ({', '.join(c for c in counts if c)})"]
    subject = commit_messages.subjects(data.project.repo, data.project.commit_rank).get(commit)
    if subject:
        header += [html.Br(), html.Span(subject, className="commit-subject")]
    if url:
        header += [" · ", html.A("commit ↗", href=url, target="_blank")]
    order = {"regression": 0, "improvement": 2}
    ranked = sorted(members, key=lambda f: (order[f.direction] + (id(f) in accepted), -_size(f)))
    children = _sub_metrics(ranked)
    nested_ids = {id(c) for kids in children.values() for c in kids}

    def placed(f):  # a finding's item with its sub-metrics' items nested under it
        item = _item(data, f, machine, env, commit, run, theme, accepted, view)
        if children.get(id(f)):
            item.children.append(html.Ul([placed(c) for c in children[id(f)]], className="sub-metrics"))
        return item

    tops = [placed(f) for f in ranked if id(f) not in nested_ids]
    return html.Details([html.Summary(header, className="group-header"), html.Ul(tops)], open=open_,
                        className="card inbox-group")


def _sub_metrics(ranked: list) -> dict[int, list]:
    """{id(parent finding): its sub-metrics' findings, in ``ranked`` order}. What counts as a
    sub-metric (``step.forward`` under ``step``, same parameters, same way) is the gate's rule
    (regressions.report.nested), so the page and the gate's report nest alike."""
    from regressions.report import nested  # the gate's package imports scipy: on first use

    out: dict[int, list] = {}
    path: list = []  # the chain of parents down to the item before
    for f, depth in nested(ranked):
        del path[depth:]
        if depth:
            out.setdefault(id(path[-1]), []).append(f)
        path.append(f)
    rank = {id(f): i for i, f in enumerate(ranked)}
    for kids in out.values():
        kids.sort(key=lambda f: rank[id(f)])
    return out


def _item(data: DashboardData, f, machine, env, commit, run, theme, accepted, view, note=False,
          offer=True) -> html.Li:
    """One finding: what changed, by how much, its evidence and its links; ``offer``: its
    "accept…" button (once per page: the verdict panel repeats a finding the list shows)."""
    case, impl = run.series_of_params.get((f.benchmark, f.params), (None, None)) if run else (None, None)
    static = static_metrics.metric_of(f.benchmark)
    mode = None
    if static:  # a kernel config's registers, spills, ...: the Kernels page, narrowed to its config
        metric = static.label.lower()
        href = link("/kernels", {"machine": machine, "commit": commit, "metric": static.key, "theme": theme,
                                 **_kernel_filter(data, machine, env, f)})
    else:  # its own series on Trends: case, metric and mode here, benchmark and parameters in generic mode
        metric = (metrics.stored_metric_of(f.benchmark) or "latency") if run is None or run.suite else f.benchmark
        mode = run.mode_of_params.get((f.benchmark, f.params)) if run else None
        href = link("/trends", {"machine": machine, "env": env,
                                **(run.trend_query(f.benchmark, f.params) if run else {}),
                                "commit": commit, "theme": theme})
    entry = accepted.get(id(f))
    badge = (html.Span("accepted", className="badge accepted", style=ACCEPTED_STYLE) if entry else
             html.Span(f.direction, className=f"badge {'bad' if f.direction == 'regression' else 'good'}"))
    if f.kind == STATUS_KIND:  # into or out of "failed": no values to compare, the statuses say it
        badge = badge if entry else html.Span("failing" if f.direction == "regression" else "fixed",
                                              className=f"badge {'bad' if f.direction == 'regression' else 'good'}")
        numbers = [html.Span(f"{f.summary()} at this commit", className="what"),
                   html.Span(f.status(), className="status")]
    else:  # the numbers in columns: before → after, change, p (tabular figures, right-aligned)
        numbers = [html.Span(format_value(f.before, f.unit), className="num"), html.Span("→", className="arrow"),
                   html.Span(format_value(f.after, f.unit), className="num"),
                   html.Span(format_change(f.relative_change), className="num change"),
                   html.Span(format_p(f.p_value), className="num p"), html.Span(f.status(), className="status")]
    item = view.item_for(f)
    kind, evidence = _class_badge(item)
    evidence = ([entry] if entry else []) + ([f"gate: {item['note']}"] if note and item else []) \
        + ([evidence] if evidence else [])
    return html.Li([
        badge, f" {metric} ", html.Code(case or f.params),
        (f" [{impl or ('static' if static else '?')}{' · ' + mode if mode and mode != metrics.FORWARD else ''}] "
         if static or run is None or run.suite else " "),
        dcc.Link("trend →", href=href, className="trend-link"),
        *(_accept_offer(f) if offer and f.direction == "regression" and not entry and f.present_at_newest else []),
        html.Div(numbers + ([kind] if kind else []), className="finding-numbers"),
        *([html.Small(" · ".join(evidence), className="evidence")] if evidence else []),
    ], className="finding accepted" if entry else "finding")


def _class_badge(item) -> tuple:
    """(the class the gate gave this finding as a badge, its evidence word for word); (None, "")
    where the gate gives none (gate_view.class_of)."""
    judged = class_of(item)
    if judged is None:
        return None, ""
    kind, evidence = judged
    return html.Span(kind, className=f"badge class-{kind}"), evidence  # the evidence is in the line below


def verdict_panel(data: DashboardData, view: GateView, findings, machine, theme) -> html.Div:
    """The gate's verdict on the newest commit, as ``python -m regressions --results
    <dir> [--machine M]`` gives it: pass or fail, the judged commits, the findings that fail it
    (with the gate's reason, class and evidence), then what it lists without failing."""
    command = f"python -m regressions --results {data.results_dir}" + (f" --machine {machine}"
                                                                                  if machine else "")
    if not view.ready:
        return html.Div(message("The gate's verdict comes with the findings…"), id="regressions-verdict")
    if view.error:
        return html.Div([html.H2("Gate: cannot judge"), message(f"the gate cannot judge, so nothing is shown as accepted or classified: {view.error} (exit 2 of "
                                 f"`{command}`)", "error")],
                        id="regressions-verdict", className="card verdict")
    whole_folder = whole_folder_note(view, data.results_dir)
    failing = view.failing(machine)
    word = view.word(machine)
    runs = [f"{r['machine']} / {r['env_name']}: " + (", ".join(c[:8] for c in r["commits"]) or "nothing new")
            for r in view.judged(machine)]
    by_key = {}
    for f in findings:
        by_key.setdefault(change_key(f), f)
    rows = []
    for item in failing:
        f = by_key.get(change_key(item["change"]))
        if f is None:  # a series the pages do not show: the gate's own line
            rows.append(html.Li([html.Span(FAILING_CLASS, className="badge bad"), " ",
                                 html.Code(f"{item['change']['benchmark']}({item['change']['params']})"),
                                 html.Small(f" gate: {item['note']}", className="evidence")], className="finding"))
            continue
        run = data.runs.get((f.machine, f.env_name))
        rows.append(_item(data, f, f.machine, f.env_name, f.commit_hash, run, theme, {}, view, note=True,
                          offer=False))
    others: dict[str, int] = {}
    for item in view.items(machine):
        if not view.is_failing(item):
            others[item["category"]] = others.get(item["category"], 0) + 1
    listed = ", ".join(f"{n} {c}" for c, n in sorted(others.items()))
    return html.Div([
        *whole_folder,
        html.H2([f"Gate on the newest commit: {word}",
                 html.Span("fails" if view.failed(machine) else "passes",
                           className=f"badge {'bad' if view.failed(machine) else 'good'}")]),
        html.P(["Judged: " + "; ".join(runs) + ". The verdict of ", html.Code(command), " (exit "
                f"{1 if view.failed(machine) else 0})."], className="hint"),
        *([html.P(f"{len(failing)} finding(s) fail the gate now:"), html.Ul(rows, className="verdict-failing")]
          if failing else []),
        *([html.P(f"Listed by the gate, not failing it: {listed}.", className="hint")] if listed else []),
    ], id="regressions-verdict", className="card verdict")


def register(app, store: ResultsStore):
    @app.callback(Output("regressions-inbox", "children"), Output("regressions-poll", "disabled"),
                  inputs=dict(named_values(ID, ("machine", "direction", "only", "page")),
                              polls=Input("regressions-poll", "n_intervals"), search=Input(qid(ID, "q"), "value"),
                              theme=Input(qid(SHELL, "theme"), "value")))
    @guarded(lambda t: message(t, "error"), lambda t: True)
    def _update(polls, **named):  # polls: only when to look again; the rest are inbox's parameters by name
        data = store.get()
        return inbox(data, store.findings(), **named, machine_record=lambda m, why: machine_record(store, data, m, why))

    @app.callback(Output({"type": f"{ACCEPT}-entry", "index": MATCH}, "children"),
                  Input({"type": ACCEPT, "index": MATCH}, "n_clicks"), prevent_initial_call=True)
    @guarded(lambda t: message(t, "error"))
    def _accept(clicks):
        from dash import ctx

        if not clicks:
            return no_update
        return accept_box(store.findings().findings, ctx.triggered_id["index"])


PAGE = Page("/regressions", "Regressions", 4, layout, register, "changes found by the detector, per commit")
