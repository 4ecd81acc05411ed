"""The correctness bound follows from the arithmetic (harness.tolerances): a correct fp32 kernel
that accumulates K products one after another passes at the GPU check's sizes, where the old
fixed 1e-6 failed it; a dropped K term (off-by-one) and a dropped K tile still fail."""

import math

import pytest
import torch

from benchmarks.harness.references import mismatch, rel_error
from benchmarks.harness.tolerances import STORAGE, UNIT_ROUNDOFF, reduction_lengths, tolerance
from workload.case import Case

GATED_BIG = Case("gated_mlp", 8192, 4096, 14336, "fp32", "silu")


def sequential_fp32_matmul(x: torch.Tensor, w: torch.Tensor, terms=None) -> torch.Tensor:
    """x @ w accumulated in fp32 one K term at a time, as a tile kernel's K loop does (torch's
    own matmul sums in blocks, which rounds less); `terms`: the K indices summed (default all)."""
    acc = torch.zeros(x.shape[0], w.shape[1], dtype=torch.float32)
    for k in range(x.shape[1]) if terms is None else terms:
        acc.addcmul_(x[:, k:k + 1], w[k:k + 1, :])
    return acc


@pytest.fixture(scope="module")
def down_projection():
    """A slice of the big gated MLP's down GEMM (K = 14336): 32 rows x 64 columns."""
    gen = torch.Generator().manual_seed(0)
    K = GATED_BIG.N
    x = torch.randn(32, K, generator=gen)
    w = torch.randn(K, 64, generator=gen) / math.sqrt(K)
    return x, w, (x.double() @ w.double())


def test_a_correct_sequential_accumulation_passes_where_the_fixed_tolerance_failed(down_projection):
    x, w, ref = down_projection
    out = sequential_fp32_matmul(x, w)
    err = rel_error(out, ref)
    assert err > 1e-6, err  # the old fixed fp32 tolerance calls this correct kernel wrong
    assert err <= tolerance(GATED_BIG), (err, tolerance(GATED_BIG))
    assert mismatch(out, ref, torch.float32, tolerance=tolerance(GATED_BIG)) is None
    assert "relative error" in mismatch(out, ref, torch.float32)  # the per-dtype table alone


def test_an_off_by_one_and_a_dropped_tile_fail(down_projection):
    x, w, ref = down_projection
    K = x.shape[1]
    off_by_one = sequential_fp32_matmul(x, w, range(K - 1))  # the K loop stops one term early
    dropped_tile = sequential_fp32_matmul(x, w, [k for k in range(K) if not 4096 <= k < 4128])  # one BLOCK_K=32
    for planted in (off_by_one, dropped_tile):
        assert rel_error(planted, ref) > 10 * tolerance(GATED_BIG)
        assert mismatch(planted, ref, torch.float32, tolerance=tolerance(GATED_BIG)) is not None
    bf16 = Case("gated_mlp", 8192, 4096, 14336, "bf16", "silu")
    assert rel_error(dropped_tile, ref) > tolerance(bf16)  # a dropped tile shows even under bf16's bound


def test_the_bound_grows_with_the_reductions_of_each_op():
    linear = Case("linear_act", 8192, 4096, 14336, "fp32", "gelu_tanh", bias=True)
    narrow = Case.from_widths("narrow_mlp", 1024, (64, 128, 128, 32), "fp16", "relu")
    assert reduction_lengths(linear) == [4096]
    assert reduction_lengths(GATED_BIG) == [4096, 14336]  # up over K, down over the hidden width
    assert reduction_lengths(narrow) == [64, 128, 128]
    expected = STORAGE["fp32"] + 3 * UNIT_ROUNDOFF["fp32"] * math.sqrt(4096 + 14336)
    assert tolerance(GATED_BIG) == pytest.approx(expected)
    assert tolerance(linear) < tolerance(GATED_BIG)
    small = Case("linear_act", 33, 40, 72, "fp32", "gelu_tanh", bias=True)
    assert tolerance(small) < 2.5e-6  # small K: near the dtype's storage term


def _sequential_linear_gradients(x, weight, grad_out, rows):
    """linear_act's (activation none) gradients, dW and db accumulated in fp32 one token after
    another over `rows`, as a tile kernel's loop over M does; dx by torch (a short reduction)."""
    d_weight = torch.zeros_like(weight)
    d_bias = torch.zeros(weight.shape[0], dtype=torch.float32)
    for m in rows:
        d_weight.addcmul_(grad_out[m:m + 1, :].T, x[m:m + 1, :])
        d_bias.add_(grad_out[m])
    return grad_out @ weight, d_weight, d_bias


def test_each_gradient_is_judged_by_its_own_reduction_a_correct_fp32_dw_passes_a_lost_tile_fails():
    """dW and db sum over the M = 8,192 tokens: a correct sequential fp32 sum is off by ~2e-6 here (3.7e-6 at the GPU check's sizes),
    which the forward's 1e-6 rejected; a lost tile of 32 tokens is still caught."""
    from benchmarks.harness import training
    from benchmarks.harness.tensors import make_inputs
    from benchmarks.harness.tolerances import gradient_tolerance

    case = Case("linear_act", 8192, 4, 8, "fp32", "none", bias=True)
    inputs = make_inputs(case)
    grad_out = training.upstream_gradient(case, "cpu")
    x, weight = inputs["x"], inputs["weight"]
    correct = _sequential_linear_gradients(x, weight, grad_out, range(case.M))
    ref = training.reference_gradients(case, inputs, grad_out)["weight"]
    assert rel_error(correct[1], ref) > 1e-6  # the forward's bound would call it wrong
    assert gradient_tolerance(case, "weight") > gradient_tolerance(case, "x")  # M is dW's length, not dx's
    assert training.gradients_problem(case, inputs, grad_out, correct) is None
    lost_tile = _sequential_linear_gradients(x, weight, grad_out, [m for m in range(case.M) if not 4096 <= m < 4128])
    problem = training.gradients_problem(case, inputs, grad_out, lost_tile)
    assert problem is not None and problem.startswith("gradient of weight: relative error"), problem


def test_gradient_lengths_follow_each_op_s_chain():
    from benchmarks.harness.tolerances import gradient_reduction_length

    linear = Case("linear_act", 8192, 4096, 14336, "fp32", "gelu_tanh", bias=True)
    assert gradient_reduction_length(linear, "x") == 4096 + 14336  # the forward's K, dx over N
    assert gradient_reduction_length(linear, "bias") == 4096 + 14336 + 8192  # + the M tokens
    up = Case("gated_up", 64, 128, 256, "fp32", "silu")
    assert gradient_reduction_length(up, "x") == 128 + 2 * 256  # dx sums the gate's and the up's N
    assert gradient_reduction_length(GATED_BIG, "w_down") == 4096 + 14336 + 4096 + 2 * 14336 + 8192
    narrow = Case.from_widths("narrow_mlp", 1024, (64, 128, 32), "fp32", "relu")
    assert gradient_reduction_length(narrow, "weights[0]") == 64 + 128 + 32 + 128 + 1024
