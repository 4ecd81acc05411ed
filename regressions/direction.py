"""Which way is better for a metric: the one table the detector, the gate and the dashboard read.

asv stores every metric lower-is-better (times, bytes, counts), and so does this suite; a metric
is higher-is-better only when a row below says so, by its unit (TFLOP/s, GB/s, speedup) or by its
name (tflops, bandwidth, throughput, roofline fraction).
"""

from __future__ import annotations

import re
from typing import Callable, Mapping

LOWER, HIGHER = "lower", "higher"

# What a metric's unit or name must match to be higher-is-better. The dashboard's derived
# metrics (TFLOP/s, GB/s, roofline fraction) get their direction from here too.
HIGHER_IS_BETTER = {
    "unit": re.compile(r"(/\s*s(ec(ond)?)?$)|(per[\s_-]?s(ec(ond)?)?$)|^(x|speedup|ratio|%\s*of\s*peak)$", re.I),
    "name": re.compile(r"(tflops|gflops|flops|gbps|tbps|throughput|bandwidth|speedup|higher_is_better|roofline"
                       r"|ops_per_s)", re.I),
}


def metric_direction(
    benchmark: str,
    unit: str | None = None,
    overrides: Mapping[str, str] | Callable[[str, str | None], str | None] | None = None,
    metadata: Mapping | None = None,
) -> str:
    """"lower" or "higher" (is better) for a benchmark.

    Checked in order: ``overrides`` (a mapping of regex on the benchmark name -> "lower" /
    "higher", or a function returning one of those or None); a ``higher_is_better``
    attribute the benchmark declared (asv copies benchmark attributes into
    benchmarks.json, passed as ``metadata``); the unit (TFLOP/s, GB/s, speedup, x);
    the benchmark name (tflops, gbps, throughput, bandwidth, speedup). Default: lower.
    """
    if overrides is not None:
        if callable(overrides):
            chosen = overrides(benchmark, unit)
            if chosen is not None:
                return _checked_direction(chosen)
        else:
            for pattern, chosen in overrides.items():
                if re.search(pattern, benchmark):
                    return _checked_direction(chosen)
    if metadata is not None and isinstance(metadata.get("higher_is_better"), bool):
        return HIGHER if metadata["higher_is_better"] else LOWER
    if unit and HIGHER_IS_BETTER["unit"].search(unit.strip()):
        return HIGHER
    if HIGHER_IS_BETTER["name"].search(benchmark.rsplit(".", 1)[-1]):
        return HIGHER
    return LOWER


def _checked_direction(value: str) -> str:
    if value not in (LOWER, HIGHER):
        raise ValueError(f"direction must be {LOWER!r} or {HIGHER!r}, got {value!r}")
    return value
