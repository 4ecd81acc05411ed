"""Numbers as reports print them: values in their unit, p-values with sensible precision.

Times and sizes go through asv's own formatters (``asv.util.human_time``, ``human_file_size``), as
``asv compare`` prints them. asv calls a track benchmark's unit "unit" when it declares none;
that word is never printed.
"""

from __future__ import annotations

import math

from asv.util import human_file_size, human_time

NO_UNIT = {"", "unit", "units"}
P_FLOOR = 1e-6  # below this a p-value from a handful of points or samples says only "tiny"


def format_value(value: float, unit: str | None) -> str:
    """1.234e-4, "seconds" -> "123μs"; 3.2e9, "bytes" -> "3.2 GB"; 123.4, "TFLOP/s" -> "123.4 TFLOP/s"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    unit = (unit or "").strip()
    if unit.lower() in ("seconds", "second", "s"):
        return human_time(value)
    if unit.lower() in ("bytes", "byte", "b"):
        text = human_file_size(value)  # "3.2G", "1.54k", "512"
        return f"{text[:-1]} {text[-1]}B" if text[-1].isalpha() else f"{text} B"
    text = f"{value:.4g}"
    return text if unit.lower() in NO_UNIT else f"{text} {unit}"


def format_p(p: float) -> str:
    """"p<1e-6", "p=3.2e-5", "p=0.0012", "p=0.21" (never p=0 or p=1.2e-206)."""
    if p is None or not math.isfinite(p):
        return "p=n/a"
    if p < P_FLOOR:
        return f"p<{P_FLOOR:.0e}".replace("e-0", "e-")
    if p < 1e-3:
        mantissa, exponent = f"{p:.1e}".split("e")
        return f"p={mantissa}e{int(exponent)}"
    return f"p={p:.2g}"
