"""The named grids of Cases the asv suite runs (torch-free); each op lists its own Cases.

tiny     CPU smoke run (CI, laptops): one small case per op.
quick    a smoke run on a GPU: the anchor cases, minutes at most.
default  the grid the history is kept on: real model shapes at decode and prefill sizes, every
         dtype and activation covered without taking the full product.
full     the full products, for investigations.
"""

from __future__ import annotations

from .ops import OPS
from .workloads import Case

GRIDS = ("tiny", "quick", "default", "full")
GRID_ENV = "FUSED_MLP_GRID"  # the grid an asv run uses (default: "default")


def benchmarked_ops() -> list[str]:
    """The ops with an asv class of their own (the others are timed inside another op)."""
    return [name for name, spec in OPS.items() if spec.benchmark_class]


def grid(name: str) -> dict[str, list[Case]]:
    """The Cases of grid `name`, per benchmarked op."""
    if name not in GRIDS:
        raise ValueError(f"grid {name!r} is not known; expected one of {list(GRIDS)}")
    return {op: OPS[op].cases(name) for op in benchmarked_ops()}
