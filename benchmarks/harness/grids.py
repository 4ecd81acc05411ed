"""The named grids of Cases the asv suite runs (torch-free); each op lists its own Cases.

tiny     CPU smoke run (CI, laptops): one small case per op.
quick    a smoke run on a GPU: the anchor cases, minutes at most.
default  the grid the history is kept on: real model shapes at decode and prefill sizes, every
         dtype and activation covered without taking the full product.
full     the full products, for investigations.

Each grid also has training cases (`training_grid`, bench_training's backward and full modes):
tiny one per op on the CPU, quick one per op, default Llama-3-8B's projections at 4096 and 8192
tokens and the seed GeGLU at 8192 tokens, in bf16. compile_max_autotune autotunes minutes per
GEMM shape, so in the forward grids it runs only on the shapes the training cases autotune
anyway (`autotuned`): the GPU budgets hold, and its forward and training share one autotune cache.
"""

from __future__ import annotations

import os

from . import fp8
from .ops import OPS
from .workloads import Case

GRIDS = ("tiny", "quick", "default", "full")
GRID_ENV = "FUSED_MLP_GRID"  # the grid an asv run uses (default: "default")


def benchmarked_ops() -> list[str]:
    """The ops with an asv class of their own (the others are timed inside another op)."""
    return [name for name, spec in OPS.items() if spec.benchmark_class]


def _check(name: str) -> None:
    if name not in GRIDS:
        raise ValueError(f"grid {name!r} is not known; expected one of {list(GRIDS)}")


def grid(name: str) -> dict[str, list[Case]]:
    """The Cases of grid `name`, per benchmarked op."""
    _check(name)
    return {op: OPS[op].cases(name) + fp8.cases(op, name) for op in benchmarked_ops()}  # + the FP8 dtypes'


def training_grid(name: str) -> dict[str, list[Case]]:
    """The Cases of grid `name`'s training modes, per benchmarked op."""
    _check(name)
    return {op: OPS[op].training_cases(name) for op in benchmarked_ops()}


def current_grid() -> str:
    """The grid this asv run uses ($FUSED_MLP_GRID, default "default")."""
    return os.environ.get(GRID_ENV, "default")


def _gemm_shape(case: Case) -> tuple:
    return case.op, case.M, case.K, case.N, case.widths, case.dtype


def autotuned(case: Case, name: str) -> bool:
    """Whether compile_max_autotune runs `case` in grid `name`: every case outside the grid (tests,
    profiling), and the grid's cases whose shapes its training cases share."""
    if name not in GRIDS or case not in OPS[case.op].cases(name):
        return True
    return _gemm_shape(case) in {_gemm_shape(c) for c in OPS[case.op].training_cases(name)}
