"""Numbers as the gate's reports print them: values and changes exactly as the pages show them
(asv_results.units: "196 µs", "2.15 GB", "+25.8%"; asv's placeholder unit "unit" never printed),
p-values with sensible precision.
"""

from __future__ import annotations

import math

from asv_results.units import format_change, format_value  # noqa: F401 (the one definition; re-exported)

P_FLOOR = 1e-6  # below this a p-value from a handful of points or samples says only "tiny"


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
