"""The named grids of Cases the asv suite runs (torch-free); each op lists its own Cases.

tiny     CPU smoke run (CI, laptops): one small case per op.
quick    a smoke run on a GPU: the anchor cases, minutes at most.
default  the grid the history is kept on: real model shapes at decode and prefill sizes, every
         dtype and activation covered without taking the full product.
full     the full products, for investigations.

Each grid also has training cases (`training_grid`, bench_training's backward and full modes):
tiny and quick one per op, default Llama-3-8B's up projection and SwiGLU MLP and the seed GeGLU at
8192 tokens, and the narrow MLP, in bf16.

The GPU budgets (the GPU session's quick stage within its cap, and each of the default grid's
parts within 80 % of a 600 s call, on one H200 with cold caches, modelled by
`python -m benchmarks.session_cost` from these grids; tests/test_session_cost.py fails when a
grid outgrows them) decide where the costly implementations run (`left_out`):
- compile_max_autotune tunes every GEMM shape it meets (30-60 s each, guessed; budgeted at 60) and compiles a
  training step's two graphs: in the forward grids it runs only on the shapes the grid's
  training cases tune anyway (`autotuned`, one autotune cache for both), and not in quick.
- compile (default mode) costs a cold Inductor compile (budgeted at 30 s, guessed) per case and graph: in
  the default forward grid it runs on the op's main dtype and activation at the decode and
  prefill ends (M <= 16, M >= 8192), where it answers "what does torch.compile make of the
  unfused code"; the dtype and activation variants in between compare fused with eager. The
  quick grid's training modes leave both compiles out (the default grid has them).
"""

from __future__ import annotations

import os

from workload import fp8_cases
from workload.fp8_dtypes import SCALED_MM_COMPILE, is_fp8
from workload.ops import OPS
from workload.case import Case

GRIDS = ("tiny", "quick", "default", "full")
GRID_ENV = "FUSED_MLP_GRID"  # the grid an asv run uses (default: "default")
# The asv run's -b regex (benchmarks.run sets it), so that a case's first measuring process files
# only the implementations the run selects (common._CaseBenchmark).
BENCH_ENV = "FUSED_MLP_BENCH"
# A folder where each measured combination files why it was skipped or failed (benchmarks.run
# sets it and keeps the reasons beside the results: benchmarks/skip_reasons.py).
OUTCOMES_ENV = "FUSED_MLP_OUTCOMES"


def benchmarked_ops() -> list[str]:
    """The ops with an asv class of their own (the others are timed inside another op)."""
    return [name for name, spec in OPS.items() if spec.benchmark_class]


def _check(name: str) -> None:
    if name not in GRIDS:
        raise ValueError(f"grid {name!r} is not known; expected one of {list(GRIDS)}")


def grid(name: str) -> dict[str, list[Case]]:
    """The Cases of grid `name`, per benchmarked op."""
    _check(name)
    return {op: OPS[op].cases(name) + fp8_cases.cases(op, name) for op in benchmarked_ops()}  # + the FP8 dtypes'


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


# Where the compiles run (tiny and full: everywhere). max-autotune, default grid: Llama-3-8B's
# projections (4096 <-> 14336) at the training shapes, forward, and trained on the SwiGLU MLP: the
# forward, dX and dW GEMMs make 4 shapes to tune in all (the linear up projection and the SwiGLU
# MLP share them). Trained, they come to 240 s at the pessimistic 60 s a shape: the GPU session
# runs GatedMLPTraining's max-autotune combinations in a call of their own (session.sh rest_parts,
# benchmarks.session_cost --part K). torch.compile, default grid: the forward of each op's main
# case (its first default case's dtype, activation and shape) at M=16 and M>=8192, of the seed
# GeGLU and where max-autotune runs, and the SwiGLU MLP trained (the unfused code compiled, beside
# max-autotune's tuned GEMMs). Quick: the gated MLP's forward only (the seed article's question:
# what torch.compile's GELU x mul fusion brings), and the full training step only.
MAX_AUTOTUNE_DIMS = {(4096, 14336), (14336, 4096)}
MAX_AUTOTUNE_TRAINING_OP = "gated_mlp"  # Llama's SwiGLU: fused against LigerMLP and max-autotune, trained
SEED_GEGLU = Case("gated_mlp", 8192, 768, 3072, "bf16", "gelu_tanh")


def _main_case(case: Case) -> bool:
    first = OPS[case.op].cases("default")[0]
    return (case.dtype, case.activation, case.K, case.N) == (first.dtype, first.activation, first.K, first.N)


def _in_grid(case: Case, mode: str, name: str) -> bool:
    if mode != "forward":
        return case in OPS[case.op].training_cases(name)
    return case in OPS[case.op].cases(name) or case in fp8_cases.cases(case.op, name)


def left_out(case: Case, impl: str, mode: str, name: str) -> str | None:
    """Why grid `name` leaves implementation `impl` out of `case` in `mode` (its GPU budget), or
    None. Cases outside the grid (tests, profiling) are never left out; nor is anything in the
    tiny and full grids."""
    if name not in ("quick", "default") or not _in_grid(case, mode, name):
        return None
    training = mode != "forward"
    if is_fp8(case.dtype) and impl in ("compile", SCALED_MM_COMPILE):
        return (f"{impl} of the FP8 Cases runs in the full grid (a cold Inductor compile per FP8 case would "
                "exceed the quick and default grids' GPU budgets; scaled_mm is the FP8 peer there)")
    if name == "quick":
        if mode == "backward":
            return "the quick grid times the full training step only (the default grid has the backward alone)"
        if impl == "compile_max_autotune":
            return "compile_max_autotune is left out of the quick grid (minutes of autotuning; the default grid has it)"
        if impl == "compile" and (training or case.op != "gated_mlp"):
            return "compile runs in the quick grid on the gated MLP's forward only (the default grid has the rest)"
        return None
    max_autotuned = (case.K, case.N) in MAX_AUTOTUNE_DIMS and autotuned(case, name) and (
        not training or case.op == MAX_AUTOTUNE_TRAINING_OP)
    if impl == "compile_max_autotune" and not max_autotuned:
        return (f"compile_max_autotune runs in the default grid on Llama-3-8B's projections at the training shapes "
                f"(trained: the {MAX_AUTOTUNE_TRAINING_OP} only); autotuning every GEMM shape would exceed the GPU budget")
    if impl == "compile":
        if training and not (max_autotuned and case.op == MAX_AUTOTUNE_TRAINING_OP):
            return (f"compile is left out of the default grid's training modes but the {MAX_AUTOTUNE_TRAINING_OP}'s "
                    "(two cold graphs per case would exceed the GPU budget; eager is the unfused baseline there)")
        if training:
            return None
        if not (max_autotuned or case == SEED_GEGLU or (_main_case(case) and (case.M == 16 or case.M >= 8192))):
            return ("compile runs in the default grid's forward on each op's main case at M=16 and M>=8192, the "
                    "seed GeGLU and where compile_max_autotune runs (a cold Inductor compile per case would exceed "
                    "the GPU budget)")
    return None
