"""The URL query string <-> the selections of a view (pure; no Dash).

Every control a person would share has an id ``{"type": "q", "page": <page>, "key": <key>}``;
its value is written to ``?key=value`` (lists comma-joined), so a copied link restores the view.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, unquote, urlencode

QUERY_TYPE = "q"
SHELL = "shell"  # controls outside any page (the theme)
# Selections that follow the user from page to page through the navigation links.
SHARED_KEYS = ("machine", "env", "op", "dtype", "activation", "shape", "impl", "mode", "theme")
PARAM_PREFIX = "p_"  # generic Trends: p_<parameter>=<asv's repr() of the values shown>
# Characters a list item keeps as they are; everything else ("," and "%" above all) is escaped.
_LIST_SAFE = " =.:_-+*/()[]'\"<>|~!@$^&;?{}"
# A folder name that is not UTF-8 reaches Python with surrogate escapes ('h200-\udcff'); its
# bytes are percent-encoded as they are and decoded back the same way, so the link selects it.
_ESCAPES = "surrogateescape"


def qid(page: str, key: str) -> dict:
    """The id of a control whose value lives in the URL under ``key``."""
    return {"type": QUERY_TYPE, "page": page, "key": key}


def encode_query(values: dict[str, object]) -> str:
    """``{"impl": ["fused", "eager"], "metric": "latency", "x": None}`` -> ``?impl=fused,eager&metric=latency``."""
    pairs = []
    for key, value in values.items():
        if value is None or value == "" or value == []:
            continue
        if isinstance(value, (list, tuple)):  # an item's own "," or "%" is escaped: "(1, 2)" stays one item
            value = ",".join(quote(str(v), safe=_LIST_SAFE, errors=_ESCAPES) for v in value)
        elif isinstance(value, bool):
            value = "1" if value else "0"
        pairs.append((key, str(value)))
    return "?" + urlencode(pairs, errors=_ESCAPES) if pairs else ""


class Query:
    """Read access to a query string, tolerant of anything a hand-edited link may hold.

    Values a page could not use (not among ``allowed``, or passed to :meth:`reject`) are kept in
    ``rejected``, so the page can say what the link asked for and what it shows instead.
    """

    def __init__(self, search: str | None):
        self.raw: dict[str, str] = {}
        for key, value in parse_qsl((search or "").lstrip("?"), keep_blank_values=False, errors=_ESCAPES):
            self.raw[key] = value
        self.rejected: dict[str, str] = {}

    def one(self, key: str, default=None, allowed=None):
        """A single value; ``default`` when absent or not among ``allowed``."""
        value = self.raw.get(key)
        if value is None:
            return default
        if allowed is not None and value not in allowed:
            self.reject(key, value)
            return default
        return value

    def many(self, key: str, allowed=None) -> list[str]:
        """A comma-joined list; values not in ``allowed`` are dropped."""
        value = self.raw.get(key)
        if not value:
            return []
        items = [unquote(v, errors=_ESCAPES) for v in value.split(",") if v]
        bad = [v for v in items if allowed is not None and v not in allowed]
        if bad:
            self.reject(key, ",".join(bad))
        return [v for v in items if v not in bad]

    def reject(self, key: str, value: str) -> None:
        """Note that the link's ``key=value`` could not be shown."""
        self.rejected[key] = value

    def flag(self, key: str) -> bool:
        return self.raw.get(key, "") not in ("", "0", "false", "no")

    def shared(self) -> dict[str, str]:
        return {k: v for k, v in self.raw.items() if k in SHARED_KEYS}


def link(path: str, values: dict[str, object]) -> str:
    return path + encode_query(values)
