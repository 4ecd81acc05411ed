"""The lines a page shows instead of, or above, its content: no results, a mode the page does not
serve, a link that asks for what the results lack, the files the loader skipped, a message.
"""

from __future__ import annotations

from dash import dcc, html

from dashboard.data.dashboard_data import DashboardData
from dashboard.data.urlstate import Query


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


def whole_folder_note(view, results_dir) -> list:
    """Above one machine's gate verdict (a GateView) when the gate over every machine cannot
    judge: that verdict, and why the one CI runs over the whole folder exits 2."""
    if not view.whole_folder_error:
        return []
    return [message(f"The gate over every machine cannot judge: {view.whole_folder_error} (exit 2 of `python -m "
                    f"regressions --results {results_dir}`). Below: its verdict on this machine alone.",
                    "error")]
