"""The page registry: every module in this package that defines ``PAGE = Page(...)`` is a page.

To add a page (e.g. "Profile"), add one module here with a ``PAGE``: its path, its title in the
navigation, its order, a ``layout(data, query)`` function and a ``register(app, store)`` function
that adds its callbacks. Controls built with ``urlstate.qid(page, key)`` are kept in the URL.

The registry, not the page, decides what a page shows for the results' mode (this suite's
results, another project's "generic" ones, or static compile metrics only): a page lists the
modes it serves (``modes``), with a layout of its own for a mode that needs one (``mode_layouts``:
another project's benchmarks are picked by benchmark and parameters, not by Case); for any
other mode the registry shows the page named in ``stand_ins`` for that mode (the Overview of a
static-only folder is the Kernels page) or says why the page is off. Pages never import one
another, and no page checks the mode itself.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable

from dash import html

from dashboard.ui.notices import generic_notice, static_only_notice
from dashboard.data.dashboard_data import GENERIC, STATIC, SUITE, DashboardData
from dashboard.store.model import ResultsStore
from dashboard.data.urlstate import Query

ALL_MODES = (SUITE, GENERIC, STATIC)


@dataclass(frozen=True)
class Page:
    path: str  # "/trends"
    title: str  # shown in the navigation
    order: int  # navigation position
    layout: Callable[[DashboardData, Query], object]  # builds the page from the data and the URL
    register: Callable[[object, ResultsStore], None]  # adds the page's callbacks to the app
    description: str = ""
    modes: tuple[str, ...] = ALL_MODES  # the results' modes this page's layout serves
    stand_ins: tuple[tuple[str, str], ...] = ()  # (mode, path of the page shown instead in that mode)
    mode_layouts: tuple[tuple[str, Callable[[DashboardData, Query], object]], ...] = ()  # (mode, its layout)

    def layout_for(self, mode: str) -> Callable[[DashboardData, Query], object]:
        """The layout this page shows in ``mode`` (one of its ``modes``)."""
        return dict(self.mode_layouts).get(mode, self.layout)


def discover_pages() -> list[Page]:
    """Every ``PAGE`` in this package, in navigation order."""
    pages = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        page = getattr(module, "PAGE", None)
        if isinstance(page, Page):
            pages.append(page)
    paths = [p.path for p in pages]
    duplicates = {p for p in paths if paths.count(p) > 1}
    if duplicates:
        raise ValueError(f"two pages claim the path(s) {sorted(duplicates)}")
    return sorted(pages, key=lambda p: (p.order, p.path))


def page_layout(page: Page, pages: list[Page], data: DashboardData, query: Query):
    """What ``page`` shows for these results: its layout in a mode it serves; else the page it
    names as its stand-in for the mode (with a line saying so); else why it is off."""
    if data.mode in page.modes:
        return page.layout_for(data.mode)(data, query)
    stand_in = next((p for p in pages if p.path == dict(page.stand_ins).get(data.mode) and data.mode in p.modes), None)
    if stand_in is not None:
        return html.Div([html.P(_stand_in_line(data, stand_in), className="message", id=f"{data.mode}-notice"),
                         stand_in.layout_for(data.mode)(data, query)])
    if data.mode == STATIC:
        return static_only_notice(data, page.title)
    return generic_notice(data, page.title)


def _stand_in_line(data: DashboardData, stand_in: Page) -> str:
    if data.mode == STATIC:
        return ("No timings in these results yet (they come from a GPU runner); these are the static compile "
                "metrics of the kernels, commit by commit.")
    return f"These results have nothing for this page; {stand_in.title} shows what they hold."
