"""How values are shown: one scaled unit per axis or table column, one number-with-unit format and
one relative-change format, used by the pages and the gate's reports alike.

asv stores times in seconds and memory in bytes. An axis of 135e-6 s values reads best as
"135" under "µs", not as Plotly's SI ticks with a suffix ("135µ s"), so figures and tables pick
one scale for all their values and put the unit in the title (pure; no pandas, no Dash).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# asv's unit names -> the symbol shown
SYMBOLS = {"seconds": "s", "second": "s", "s": "s", "bytes": "B", "byte": "B", "B": "B"}
# Units that get an SI prefix chosen per view, largest first.
_PREFIXES = {
    "s": (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)),
    "B": (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("B", 1.0)),
}


@dataclass(frozen=True)
class DisplayUnit:
    """Values are shown as ``value / scale`` followed by ``symbol`` ("" for a bare number)."""

    symbol: str
    scale: float = 1.0

    def __call__(self, values):
        return np.asarray(values, dtype=float) / self.scale

    def title(self, label: str) -> str:
        """An axis or column title: "Latency (µs)", or the label alone for a bare number."""
        return f"{label} ({self.symbol})" if self.symbol else label


def symbol_of(unit: str | None) -> str:
    """The symbol for an asv unit name ("seconds" -> "s"); asv's placeholder "unit" means none."""
    if not unit or unit == "unit":
        return ""
    return SYMBOLS.get(unit, unit)


def _scaled(symbol: str, magnitude: float) -> DisplayUnit:
    """The prefix of ``symbol`` that shows ``magnitude`` (> 0) as 1-999; the smallest below that."""
    prefixes = _PREFIXES[symbol]
    for name, scale in prefixes:
        if magnitude >= scale * 0.9995:  # 999.6 µs shows as "1 ms", not "1e+03 µs"
            return DisplayUnit(name, scale)
    return DisplayUnit(*prefixes[-1])


def display_unit(unit: str | None, values=()) -> DisplayUnit:
    """The scaled unit that shows the typical (median) magnitude of ``values`` as 1-999."""
    symbol = symbol_of(unit)
    if symbol not in _PREFIXES:
        return DisplayUnit(symbol)
    v = np.abs(np.asarray(values, dtype=float).ravel())
    v = v[np.isfinite(v) & (v > 0)]
    if not len(v):
        return DisplayUnit(symbol)
    return _scaled(symbol, float(np.median(v)))


def format_value(value, unit: str | None, digits: int = 3) -> str:
    """One number with its unit, scaled for itself: "196 µs", "2.15 GB", "312 TFLOP/s", "–"."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return "–"
    if not math.isfinite(x):
        return "–"
    shown = DisplayUnit(symbol_of(unit))
    if x and shown.symbol in _PREFIXES:  # as display_unit picks it, for one value
        shown = _scaled(shown.symbol, abs(x))
    symbol, number = shown.symbol, f"{x / shown.scale:.{digits}g}"
    return f"{number} {symbol}" if symbol else number


def format_change(relative) -> str:
    """A relative change (new / old - 1) as every page and the gate print it: "+25.8%", "-3.1%",
    "–" when there is none. What it is relative to is for the place that shows it to say."""
    try:
        x = float(relative)
    except (TypeError, ValueError):
        return "–"
    return f"{x:+.1%}" if math.isfinite(x) else "–"
