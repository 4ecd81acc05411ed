"""The dashboard's pages, for the tests that walk every page: a walk over an empty list checks
nothing, so the list is asserted to be the app's pages before it is walked."""

from dashboard.pages import discover_pages

PATHS = ["/", "/trends", "/compare", "/machines", "/roofline", "/regressions", "/profile", "/kernels"]


def every_page() -> list:
    pages = discover_pages()
    assert [page.path for page in pages] == PATHS, [page.path for page in pages]
    return pages
