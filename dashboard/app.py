"""The Dash app: a shell (navigation, theme, copy-link) around the pages of dashboard.pages.

    app = create_app("results")      # or python -m dashboard --results DIR
    server = app.server              # WSGI: gunicorn dashboard.wsgi:server (docs/dashboard.md, "Deploying for a team")

Routing and URL state: one ``dcc.Location``. A page is rendered from the path and the query
string; every control whose id is ``urlstate.qid(page, key)`` writes its value back to the
query string, so a copied link reproduces the view.
"""

from __future__ import annotations

import importlib
import logging
import threading
from pathlib import Path

import dash
from dash import ALL, Dash, Input, Output, State, dcc, html

from dashboard.ui import callbacks_boundary
from dashboard.ui.notices import empty_state, link_notice, load_report_panel, message
from dashboard.figures import THEMES, warm_up
from asv_results.commit_order import order_note
from dashboard.store.model import DEFAULT_RESULTS_DIR, ResultsStore
from dashboard.pages import Page, discover_pages, page_layout
from dashboard.data.urlstate import QUERY_TYPE, SHELL, Query, encode_query, qid

log = logging.getLogger(__name__)
ALL_QUERY_CONTROLS = {"type": QUERY_TYPE, "page": ALL, "key": ALL}


def shell(pages: list[Page], note: str | None = None) -> html.Div:
    """The frame of every page; ``note`` (the demo's "demo data, synthetic") stands in its header."""
    nav = [dcc.Link(p.title, href=p.path, id=f"nav-{i}", title=p.description) for i, p in enumerate(pages)]
    return html.Div([
        dcc.Location(id="url", refresh=False),
        dcc.Store(id="theme-applied"),
        html.Header([
            html.Span("fused-mlp-bench", className="brand"),
            *([html.Span(note, className="badge bad demo-note", id="demo-note")] if note else []),
            html.Nav(nav, className="pages"),
            html.Div([
                html.Span([dcc.Clipboard(id="copy-link", title="copy a link to this view"), "copy link"],
                          className="copy-link"),
                dcc.RadioItems(id=qid(SHELL, "theme"), options=[{"label": " light", "value": "light"},
                                                               {"label": " dark", "value": "dark"}],
                               value="light", inline=True),
            ], className="topbar-right"),
        ], className="topbar"),
        html.Main(id="page"),
    ])


def render_page(store: ResultsStore, pages: list[Page], pathname: str | None, search: str | None):
    """The content for a path and query string (also what the router callback returns)."""
    data = store.get()
    if data.empty:
        return empty_state(data)
    page = next((p for p in pages if p.path == (pathname or "/")), None)
    if page is None:
        return html.Div([html.H1("Page not found"),
                         html.P(["No page at ", html.Code(str(pathname)), ". Pick one above."])])
    try:
        query = Query(search)
        layout = page_layout(page, pages, data, query)  # the registry decides what the mode shows
        return html.Div([load_report_panel(data), link_notice(query, layout), layout, order_line(data)])
    except Exception as exc:  # a hand-edited link must not produce a traceback
        log.exception("layout of %s failed", page.path)
        return message(f"Could not build this page: {type(exc).__name__}: {exc}", "error")


def order_line(data) -> html.P:
    """Every page says which commit order it uses (the gate's report says the same)."""
    return html.P(f"Commit order: {order_note(data.project.commit_rank, data.project.repo)} (the gate uses the same).",
                  className="hint", id="commit-order-note")


def nav_state(pages: list[Page], pathname: str | None, search: str | None) -> tuple[list[str], list[str]]:
    """Navigation hrefs that carry the shared selections (machine, filters, theme), and active classes."""
    shared = encode_query(Query(search).shared())
    hrefs = [p.path + shared for p in pages]
    classes = ["active" if (pathname or "/") == p.path else "" for p in pages]
    return hrefs, classes


def query_from_controls(values: list, ids: list[dict], current: str | None):
    """The query string for the controls on screen (no_update until a page's controls exist)."""
    if not any(i.get("page") != SHELL for i in ids):
        return dash.no_update
    search = encode_query({i["key"]: v for i, v in zip(ids, values)})
    return search if search != (current or "") else dash.no_update


def _import_in_background() -> None:
    for name in ("regressions", "asv.commands.compare"):
        try:
            importlib.import_module(name)
        except ImportError:  # then the callback that needs it says so
            log.exception("importing %s failed", name)


def create_app(results_dir: str | Path | None = None, asv_conf: Path | None = None,
               detect_in_background: bool = True, cache_dir: Path | None = None, note: str | None = None) -> Dash:
    """A Dash app over one asv results directory (read only). ``note``: said in every page's header.

    ``asv_conf``: the project's asv.conf.json (None: the one beside the results, if any), for
    commit links and commit order. ``cache_dir``: where parsed result files are kept between
    starts (asv_results.cache; None: parse at every start and keep nothing on disk).
    """
    store = ResultsStore(results_dir if results_dir is not None else DEFAULT_RESULTS_DIR, asv_conf,
                         detect_in_background, cache_dir)
    # The detector's package imports scipy and Compare's rule asv (seconds together), which the
    # first callbacks need and start-up does not: they load while the results do.
    threading.Thread(target=_import_in_background, name="import-detector", daemon=True).start()
    pages = discover_pages()
    warm_up()
    app = Dash(__name__, title="fused-mlp-bench", suppress_callback_exceptions=True, update_title=None)
    app.layout = shell(pages, note)
    app.server.config["FUSED_MLP_STORE"] = store

    @app.callback(Output("page", "children"), Output(qid(SHELL, "theme"), "value"),
                  Input("url", "pathname"), State("url", "search"))
    def _route(pathname, search):
        return render_page(store, pages, pathname, search), Query(search).one("theme", "light", allowed=THEMES)

    @app.callback(Output("url", "search"), Input(ALL_QUERY_CONTROLS, "value"), State(ALL_QUERY_CONTROLS, "id"),
                  State("url", "search"), prevent_initial_call=True)
    def _sync_url(values, ids, current):
        return query_from_controls(values, ids, current)

    @app.callback([Output(f"nav-{i}", "href") for i in range(len(pages))]
                  + [Output(f"nav-{i}", "className") for i in range(len(pages))],
                  Input("url", "pathname"), Input("url", "search"))
    def _nav(pathname, search):
        hrefs, classes = nav_state(pages, pathname, search)
        return hrefs + classes

    app.clientside_callback(
        "function(theme) { document.documentElement.setAttribute('data-theme', theme || 'light'); return theme; }",
        Output("theme-applied", "data"), Input(qid(SHELL, "theme"), "value"))
    app.clientside_callback(
        "function(n) { return window.location.href; }",
        Output("copy-link", "content"), Input("copy-link", "n_clicks"), prevent_initial_call=True)

    for page in pages:
        page.register(app, store)
    callbacks_boundary.install(app)  # after the last callback: it checks requests against them all
    return app

