"""How far a correct result may be from the float64 reference: a bound from the arithmetic, the
same for every implementation of a Case (torch-free).

    tolerance(case) = STORAGE[dtype] + ACCUMULATION_MARGIN * u_fp32 * sqrt(sum of K over the GEMMs)

Storage: rounding to the Case's dtype where the op stores a result (a few units of that dtype's
rounding: fp32 1e-6, fp16 1e-3 ~ 2 u_fp16, bf16 1e-2 ~ 2.6 u_bf16); the reference rounds
intermediates where the op's contract stores them, so this term does not grow with the shape.

Accumulation: every implementation sums K products in fp32 (u_fp32 = 2^-24). Summing K terms one
after another, as a tile kernel's K loop does, commits one rounding per partial sum; for the
zero-mean random inputs the checks use, the partial sums grow like sqrt(k) and the rounding errors
are independent, so the relative error of the result has an rms of u * sqrt(K / 2) (the
probabilistic analysis of Higham and Mary, SIAM J. Sci. Comput. 2019, gives the same sqrt(K)
growth as a bound that holds with high probability). ACCUMULATION_MARGIN = 3 is about 4x that rms.
A chain of GEMMs (gated MLP: K then the hidden width; narrow MLP: every layer's input width)
adds their variances: sqrt of the sum of the K's.

What it still catches: a dropped term among K (an off-by-one in the K loop) changes the result by
about sqrt(1/K) relative, a dropped K tile of B terms by sqrt(B/K); both are far above the fp32
bound at any K a GPU holds (1/sqrt(14336) = 8e-3 against 2.4e-5). For bf16 the storage term
(1e-2) hides a single dropped term once K passes ~10,000; a dropped tile of 32 still shows.
tests/test_tolerances.py plants both.

Gradients (gradient_tolerance): each is a reduction of its own. dx sums over the output features
of every GEMM on the way back (N for linear_act, the hidden width twice for a gated op's two
projections, K then the hidden width for gated_mlp, each layer's output for a layered op); a
weight's and a bias's gradient sum over the M tokens, after the gradient reaching them came back
through the later GEMMs. Each also reads the forward's intermediates (the pre-activations), which
carry the forward's K's. So a gradient's bound is the same formula with the sum of the lengths its
value went through: a correct fp32 dW at M = 8,192 has a relative error near 3.7e-6, above the
forward's 1e-6 storage term, and passes; a lost M tile still fails.
"""

from __future__ import annotations

import math

from workload import fp8_dtypes
from benchmarks.harness.ops import output_features, spec_of
from workload.case import Case

UNIT_ROUNDOFF = {"fp32": 2.0**-24, "fp16": 2.0**-11, "bf16": 2.0**-8}
STORAGE = {"fp32": 1e-6, "fp16": 1e-3, "bf16": 1e-2}
ACCUMULATION_MARGIN = 3.0


def reduction_lengths(case: Case) -> list[int]:
    """K of every GEMM the Case chains: a layered op's layer inputs; a gated op whose output has
    K features (the down projection back from the hidden width N) reduces over K, then N."""
    if case.widths:
        return [width_in for width_in, _ in case.layer_pairs]
    return [case.K, case.N] if output_features(case) != case.N else [case.K]


def accumulation_bound(case: Case) -> float:
    """The fp32 accumulation term: ACCUMULATION_MARGIN * u_fp32 * sqrt(sum of K)."""
    return ACCUMULATION_MARGIN * UNIT_ROUNDOFF["fp32"] * math.sqrt(sum(reduction_lengths(case)))


def storage_bound(case: Case) -> float:
    return fp8_dtypes.storage_tolerance(case) if fp8_dtypes.is_fp8(case.dtype) else STORAGE[case.dtype]


def tolerance(case: Case) -> float:
    """The largest relative error ||out - ref|| / ||ref|| a correct result of `case` may have."""
    return storage_bound(case) + accumulation_bound(case)


def backward_input_reductions(case: Case) -> list[int]:
    """The lengths dx's chain sums over, last GEMM first: every GEMM's output features (a gated
    op's gate and up projections each over the hidden width N, summed into one dx)."""
    if case.widths:
        return [width_out for _, width_out in reversed(case.layer_pairs)]
    up = [case.N, case.N] if "w_gate" in spec_of(case).inputs(case) else [case.N]
    return ([case.K] + up) if output_features(case) != case.N else up


def gradient_reduction_length(case: Case, name: str) -> int:
    """The sum of the reduction lengths the gradient of input `name` goes through: the forward's
    (its intermediates), dx's chain, and for a weight or bias (anything but x) the M tokens."""
    total = sum(reduction_lengths(case)) + sum(backward_input_reductions(case))
    return total if name == "x" else total + case.M


def gradient_tolerance(case: Case, name: str) -> float:
    """The largest relative error a correct gradient of input `name` (x, weight, bias, w_up,
    weights[1], ...) of `case` may have: storage + ACCUMULATION_MARGIN * u_fp32 * sqrt(its length)."""
    return storage_bound(case) + ACCUMULATION_MARGIN * UNIT_ROUNDOFF["fp32"] * math.sqrt(
        gradient_reduction_length(case, name))
