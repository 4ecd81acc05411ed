"""The FP8 dtypes' Cases in each named grid (grids.grid adds them to each op's own)."""

from __future__ import annotations

from itertools import product

from workload.case import ACTIVATIONS, MODEL_PROJECTIONS, TOKENS, Case


def cases(op: str, grid: str) -> list:
    """The FP8 Cases of grid `grid` for suite op `op` (grids.grid adds them to the op's own).

    tiny: one small case per form (CPU). quick: decode W8A16 of Llama-3-8B's up projection.
    default (inside its GPU budget, benchmarks.suite_cost: each form and activation compiles
    its kernel's configs again): Llama-3-8B's up projection in W8A16 at decode (1, 16 tokens)
    and in W8A8 at 16 and 8192 tokens, its SwiGLU MLP in W8A8 at 8192 (W8A16 is the decode form,
    W8A8 the prefill one; the gated W8A16 and the rest are in full). full: every token count and projection, the seed GeGLU, and the
    per-tensor scales too.
    """
    forms = ("fp8", "w8a16")
    if op == "linear_act":
        def case(M, K, N, dtype, act="gelu_tanh"):
            return Case("linear_act", M, K, N, dtype, act, bias=True)
        if grid == "tiny":
            return [case(16, 64, 96, dtype, "silu") for dtype in forms]
        if grid == "quick":
            return [case(16, 4096, 14336, "w8a16")]
        if grid == "default":
            # W8A16 is the decode form (it halves the weights' bytes; prefill is compute-bound)
            return [case(M, 4096, 14336, dtype) for dtype, M in (("fp8", 16), ("fp8", 8192), ("w8a16", 1), ("w8a16", 16))]
        if grid == "full":
            return [case(M, K, N, dtype, act) for dtype, M, (K, N), act
                    in product((*forms, "fp8_tensor"), TOKENS, MODEL_PROJECTIONS, ACTIVATIONS)]
    if op == "gated_mlp":
        if grid == "tiny":
            return [Case("gated_mlp", 16, 64, 96, dtype, act) for dtype, act in zip(forms, ("gelu_tanh", "silu"))]
        if grid == "default":
            return [Case("gated_mlp", M, 4096, 14336, dtype, "silu")  # Llama-3-8B's SwiGLU
                    for dtype, M in (("fp8", 8192),)]
        if grid == "full":
            return [Case("gated_mlp", M, K, N, dtype, act) for M, (K, N, act), dtype
                    in product(TOKENS, [(768, 3072, "gelu_tanh"), (4096, 14336, "silu")], (*forms, "fp8_tensor"))]
    return []
