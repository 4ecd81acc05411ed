"""The metrics the dashboard knows (pure: no Dash): the implementations' roles (fused, its fused
peers, the unfused rest), the stored and derived quantities a page can plot and which way is
better for each, the Case fields and the filters' facets.

What is derived from them lives beside: case_fields (Case fields per series), device_ceilings,
derived_metrics (TFLOP/s, GB/s, roofline), speedup_tables, ab_compare (A vs B) and
facet_filters; derived numbers are never stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from workload.modes import FORWARD, MODES  # FORWARD: a benchmark without a mode parameter

FUSED = "fused"


# The fused peers a user would pick instead of fused_mlp (the suite's implementations of those
# names): max-autotune fuses the epilogue into its GEMM template when that template wins,
# Liger-Kernel's kernels fuse the gate/up activation. Every other implementation but fused is
# "unfused" (eager, default torch.compile, cuBLASLt's epilogue). A later liger_* peer counts too.
COMPILE_MAX_AUTOTUNE = "compile_max_autotune"


FUSED_PEERS = (COMPILE_MAX_AUTOTUNE, "liger_mlp", "liger_glu")
CASE_FIELDS = ("op", "M", "K", "N", "dtype", "activation", "shape")


# Filters shared by the pages, in the order they are shown.
FACETS = ("op", "dtype", "activation", "shape", "impl", "mode")


def is_fused_peer(impl) -> bool:
    return str(impl) in FUSED_PEERS or str(impl).startswith("liger_")


def better_of(benchmark: str, unit: str | None = None, metadata=None) -> str:
    """"lower" or "higher" is better: regressions/direction.py decides (imported here on
    first use: importing the detector's package imports scipy, seconds at start-up)."""
    from regressions.direction import metric_direction

    return metric_direction(benchmark, unit, metadata=metadata if isinstance(metadata, dict) else None)


@dataclass(frozen=True)
class Metric:
    """One quantity the Trends page can plot."""

    name: str
    label: str
    unit: str  # axis suffix
    source: str  # the stored benchmark method it is derived from

    @property
    def better(self) -> str:
        """"lower" or "higher", from the one direction table the gate uses too."""
        return better_of(self.name, self.unit)


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("latency", "Latency", "s", "track_latency"),
    Metric("tflops", "Throughput", "TFLOP/s", "track_latency"),
    Metric("gbps", "Achieved bandwidth", "GB/s", "track_latency"),
    Metric("roofline", "Fraction of roofline", "", "track_latency"),
    Metric("peak_memory", "Peak memory", "B", "track_peak_memory"),
    Metric("kernels", "Kernels per call", "", "track_kernels_per_call"),
)}
STORED_METRICS = ("latency", "peak_memory", "kernels")  # what Compare compares (derived ones follow)
_METRIC_OF_SOURCE = {m.source: m.name for m in METRICS.values() if m.name in STORED_METRICS}


def stored_metric_of(benchmark: str) -> str | None:
    """The stored metric a benchmark name records ("bench_ops.LinearAct.track_latency" ->
    "latency"), or None for benchmarks that are not this suite's Case metrics."""
    return _METRIC_OF_SOURCE.get(str(benchmark).rsplit(".", 1)[-1])


def mode_order(mode) -> int:
    return MODES.index(mode) if mode in MODES else len(MODES)
