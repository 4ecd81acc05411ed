"""Pieces shared by the GEMM-shaped kernels (linear_act, gated_up): tile order and tuning configs."""

import triton
import triton.language as tl

from .._triton_compat import INTERPRETER


@triton.jit
def grouped_tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """Program id -> (tile row, tile column), walking GROUP_M row tiles per column sweep so that
    neighbouring programs reuse the same weight tiles from L2 (Triton tutorial 03)."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


def m_bucket(M: int) -> int:
    """Autotune key for M: the next power of two (capped), so decode, prefill and training sizes
    tune separately without re-tuning for every token count."""
    return min(triton.next_power_of_2(max(M, 1)), 16384)


def gemm_configs(num_accumulators: int = 1):
    """Autotune candidates for the GEMM kernels.

    Under the interpreter one mid-size tile: tuning there would only multiply test time. On a GPU,
    the tile shapes that tutorial 03 found good on Hopper-class parts plus narrow-M tiles for
    decode; kernels with two accumulators (gated_up) get the smaller-N half, since they hold twice
    the registers per tile. Tuning to beat cuBLAS is a separate piece of work.
    """
    if INTERPRETER:
        return [triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 8})]
    shapes = [
        # BLOCK_M, BLOCK_N, BLOCK_K, stages, warps
        (128, 256, 64, 3, 8),
        (128, 128, 64, 4, 4),
        (128, 128, 64, 3, 8),
        (64, 256, 64, 4, 4),
        (128, 64, 64, 4, 4),
        (64, 128, 64, 4, 4),
        (16, 128, 128, 4, 4),
        (16, 64, 256, 3, 4),
        (32, 128, 128, 4, 4),
    ]
    if num_accumulators > 1:
        shapes = [s for s in shapes if s[1] <= 128]
    return [
        triton.Config(
            {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
            num_stages=stages,
            num_warps=warps,
        )
        for bm, bn, bk, stages, warps in shapes
    ]


def check_activation_input(x, weights: dict):
    """Validate x (..., K) against named (N, K) weights; return (K, N)."""
    from .. import _validate as v

    v.check_tensor("x", x, min_ndim=1)
    for name, w in weights.items():
        v.check_tensor(name, w, ndim=2)
    v.check_same("x", x, **weights)
    v.check_runnable_device("x", x)
    K = x.shape[-1]
    first_name, first = next(iter(weights.items()))
    N = first.shape[0]
    if first.shape[1] != K:
        raise ValueError(
            f"{first_name} has shape {tuple(first.shape)}; expected (out_features, {K}), "
            f"its in_features matching x.shape[-1] = {K}"
        )
    for name, w in weights.items():
        v.check_shape(name, w.shape, first.shape, f"the shape of {first_name}")
    return K, N


def rows_view(x):
    """x (..., K) as a 2-D (M, K) tensor: a view when the strides allow it, else a copy.

    The kernels take strides, so any 2-D layout works; only leading dims need folding.
    """
    return x.reshape(-1, x.shape[-1])
