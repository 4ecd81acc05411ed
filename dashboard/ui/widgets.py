"""The building blocks of the pages' controls: a graph, a dropdown whose id is URL-backed
(urlstate.qid, so a copied link reproduces the view), a labelled control and a styled table.
"""

from __future__ import annotations

from dash import Input, dash_table, dcc, html

from dashboard.data.urlstate import qid


def named_values(page: str, keys, dependency=Input) -> dict:
    """Each URL-backed control's value under its key, as a callback's named inputs (or, with
    ``dependency=State``, states): ``inputs=dict(...)`` hands them to a function of keyword
    arguments, so adding a control cannot shift the others onto the wrong parameter."""
    return {k: dependency(qid(page, k), "value") for k in keys}


GRAPH_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def graph(page: str, name: str, figure=None) -> dcc.Graph:
    """A figure with Plotly's own modebar (image export stays available)."""
    return dcc.Loading(dcc.Graph(id=f"{page}-{name}", figure=figure or {}, config={
        **GRAPH_CONFIG, "toImageButtonOptions": {**GRAPH_CONFIG["toImageButtonOptions"],
                                                 "filename": f"fused-mlp-{page}-{name}"}}), delay_show=400)


WORSE_CELL = {"backgroundColor": "rgba(214,39,40,0.18)"}  # a value that got worse: red
BETTER_CELL = {"backgroundColor": "rgba(44,160,44,0.18)"}


def styled_datatable(table_id: str, columns: list[dict], conditional: list[dict], page_size: int = 25,
                     wrap: tuple[str, ...] = (), **extra) -> dash_table.DataTable:
    """A sortable, filterable, paged table in the page's font and theme colours. ``wrap``: text
    columns that wrap onto a second line rather than push the number columns out of a 1000 px
    window."""
    wrapped = [{"if": {"column_id": c}, "whiteSpace": "normal", "height": "auto", "minWidth": "5rem",
                "maxWidth": "10rem"} for c in wrap]
    return dash_table.DataTable(
        style_cell_conditional=wrapped, id=table_id, columns=columns, data=[], sort_action="native", filter_action="native",
        page_action="native", page_size=page_size, style_table={"overflowX": "auto"},
        # compact enough that a table of a dozen number columns fits a 1000 px window, numbers and all
        style_cell={"fontFamily": "inherit", "fontSize": "13px", "padding": "3px 5px", "textAlign": "left"},
        style_data_conditional=conditional,
        css=[{"selector": ".dash-spreadsheet-container .dash-spreadsheet-inner th",
              "rule": "background-color: var(--panel-2); color: var(--text);"},
             {"selector": ".dash-spreadsheet-container .dash-spreadsheet-inner td",
              "rule": "background-color: var(--panel); color: var(--text);"}], **extra)


def labelled(label: str, control, width: str = "12rem") -> html.Div:
    return html.Div([html.Label(label, className="control-label"), control], className="control",
                    style={"width": width})


def dropdown(page: str, key: str, options, value, multi=False, clearable=None, placeholder=None) -> dcc.Dropdown:
    return dcc.Dropdown(id=qid(page, key), options=options, value=value, multi=multi,
                        clearable=multi if clearable is None else clearable, placeholder=placeholder)
