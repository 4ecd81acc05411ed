"""What both Compare pages (this suite's and the generic one) share: the commits compared, the
factors, the table and its columns, the summary line."""

from __future__ import annotations

import pandas as pd
from dash import dash_table, dcc, html
from dash.dash_table.Format import Format, Group, Scheme

from dashboard.data import ab_compare
from dashboard.ui.widgets import BETTER_CELL, WORSE_CELL, dropdown, labelled, styled_datatable
from asv_results.units import DisplayUnit
from dashboard.data.urlstate import Query, qid

COMMITS = {"a": 1, "b": 0}  # URL key -> default offset from the newest commit
FACTORS = ("1.02", "1.05", "1.1", "1.2", "1.5")
DEFAULT_FACTOR = "1.1"  # asv compare's default


def comparison_controls(page: str, query: Query) -> list:
    """Factor, "significant only" and the CSV button ({page}-csv-button, {page}-download)."""
    return [
        labelled("Factor", dropdown(page, "factor", [{"label": f"{f}×", "value": f} for f in FACTORS],
                                    query.one("factor", DEFAULT_FACTOR, allowed=FACTORS), clearable=False), "8rem"),
        labelled("Show", dcc.Checklist(id=qid(page, "sig"), options=[{"label": " significant only", "value": "only"}],
                                       value=query.many("sig", allowed=("only",)), inline=True), "12rem"),
        html.Div([html.Button("Download CSV", id=f"{page}-csv-button", className="button"),
                  dcc.Download(id=f"{page}-download")], className="control"),
    ]


def comparison_datatable(table_id: str, columns: list[dict]) -> dash_table.DataTable:
    """The sortable, filterable A-vs-B table, worse rows red and better rows green. Text cells
    wrap (a long shape or implementation name), so old / new / ratio / change stay on screen."""
    return styled_datatable(table_id, columns, [
        {"if": {"filter_query": '{change} = "worse"'}, **WORSE_CELL},
        {"if": {"filter_query": '{change} = "better"'}, **BETTER_CELL},
    ], sort_by=[], style_data={"whiteSpace": "normal", "height": "auto", "overflowWrap": "anywhere"},
        style_header={"whiteSpace": "normal", "height": "auto"})


def comparison_columns(names: list[str], shown: DisplayUnit | None = DisplayUnit("")) -> list[dict]:
    """Old and new in one scaled unit named in their headers ("old (µs)"), 4 significant digits;
    with ``shown`` None (rows of several units) they are text with their own unit ("196 µs")."""
    values = Format(group=Group.yes, precision=4, scheme=Scheme.decimal)
    out = []
    for c in names:
        col = {"name": c, "id": c}
        if c in ("old", "new") and shown is not None:
            col.update(type="numeric", format=values, name=shown.title(c))
        elif c == "ratio":
            col.update(type="numeric", format=Format(precision=3, scheme=Scheme.fixed))
        out.append(col)
    return out


def summary_line(table: pd.DataFrame, shown_rows: pd.DataFrame, a: str, b: str, run=None) -> html.P:
    """The counts; and, when A comes after B in the run's commit order, that the table reads
    backwards (ratio = B / A: what got faster since B shows as slower)."""
    counts = ab_compare.change_counts(table)
    order = {h: i for i, h in enumerate(run.commits["commit_hash"])} if run is not None else {}
    backwards = ([html.Span(f"A ({a[:8]}) is newer than B ({b[:8]}) in this run's commit order: the ratios read "
                            "B / A, so a change since B reads reversed; swap them to read old → new. ",
                            className="bad", id="compare-backwards")]
                 if order.get(a, -1) > order.get(b, len(order)) else [])
    return html.P(backwards + [f"{a[:8]} → {b[:8]}: {len(table)} series; ",
                   html.Span(f"{counts['worse']} worse", className="bad", id="compare-worse"), ", ",
                   html.Span(f"{counts['better']} better", className="good", id="compare-better"),
                   f", {counts['unchanged']} unchanged, {counts['other']} not comparable. Showing {len(shown_rows)}."],
                  id="compare-summary-text")
