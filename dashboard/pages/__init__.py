"""The page registry: every module in this package that defines ``PAGE = Page(...)`` is a page.

To add a page (e.g. "Profile"), add one module here with a ``PAGE``: its path, its title in the
navigation, its order, a ``layout(data, query)`` function and a ``register(app, store)`` function
that adds its callbacks. Controls built with ``urlstate.qid(page, key)`` are kept in the URL.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable

from dashboard.model import DashboardData, ResultsStore
from dashboard.urlstate import Query


@dataclass(frozen=True)
class Page:
    path: str  # "/trends"
    title: str  # shown in the navigation
    order: int  # navigation position
    layout: Callable[[DashboardData, Query], object]  # builds the page from the data and the URL
    register: Callable[[object, ResultsStore], None]  # adds the page's callbacks to the app
    description: str = ""


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
