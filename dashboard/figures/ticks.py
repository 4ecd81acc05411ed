"""Log-axis ticks every figure shares (pure): few, each labelled in full.

Plotly's own log ticks label every minor tick ("2", "3", ... "9" over a decade and a half) or,
over a range narrower than a decade, none at all; a trend of 120-180 µs on a log axis then has
no readable number on it.
"""

from __future__ import annotations

import math

import numpy as np

MAX_TICKS = 8  # labels beyond this crowd an axis 300-500 px tall


def log_ticks(low: float, high: float) -> tuple[list[float], list[str]]:
    """Tick values and labels for a log axis from ``low`` to ``high``: decades (every n-th when
    there are many), else 1-2-5 per decade, else every digit, whichever first gives 3 ticks
    without passing MAX_TICKS; a range too narrow for any of them gets evenly spaced round
    numbers (120, 140, 160). Labels in full ("20", not Plotly's bare "2")."""
    if not (np.isfinite(low) and np.isfinite(high) and 0 < low < high):
        return [], []
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    for mantissas in ((1,), (1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9)):
        values = _within([m * 10.0 ** e for e in range(first, last + 1) for m in mantissas], low, high)
        if len(values) > MAX_TICKS and mantissas == (1,):  # many decades: every n-th one
            values = values[::math.ceil(len(values) / MAX_TICKS)]
        if 3 <= len(values) <= MAX_TICKS:
            return values, [tick_label(v) for v in values]
    values = _round_steps(low, high)
    return values, [tick_label(v) for v in values]


def _within(values: list[float], low: float, high: float) -> list[float]:
    return [float(f"{v:.6g}") for v in values if low <= v * (1 + 1e-9) and v <= high * (1 + 1e-9)]


def _round_steps(low: float, high: float) -> list[float]:
    """3 to MAX_TICKS multiples of a 1-2-5 step inside [low, high] (a range under a factor ~3)."""
    span = high - low
    for exponent in range(math.floor(math.log10(span)), math.floor(math.log10(span)) - 3, -1):
        for m in (5, 2, 1):
            step = m * 10.0 ** exponent
            values = _within([k * step for k in range(math.ceil(low / step), math.floor(high / step) + 1)],
                             low, high)
            if len(values) >= 3:
                return values[:: math.ceil(len(values) / MAX_TICKS)]
    return _within([low, high], low, high)


def tick_label(v: float) -> str:
    """"20", "0.05", "1,000"; very small or large values as powers of ten ("2×10⁻⁵", not "2e-05")."""
    if 1e-3 <= v < 1e6:
        return f"{v:,.10g}"
    exponent = math.floor(math.log10(v))
    mantissa = round(v / 10.0 ** exponent, 6)
    power = f"10<sup>{exponent}</sup>"
    return power if mantissa == 1 else f"{mantissa:g}×{power}"
