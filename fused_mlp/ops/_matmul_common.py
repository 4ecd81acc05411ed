"""Pieces shared by the GEMM-shaped kernels (linear_act, gated_up): tile order, the M bucket of
the autotune key, input checks."""

import math

import triton
import triton.language as tl

from .._triton_compat import BF16_CAST_TRUNCATES

_ROUND_BF16_BITS: tl.constexpr = tl.constexpr(BF16_CAST_TRUNCATES)


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


@triton.jit
def split_columns(acc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """A (BLOCK_M, BLOCK_N) tile as its left and right (BLOCK_M, BLOCK_N // 2) halves."""
    halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
    return tl.split(halves)


@triton.jit
def k_offsets(BLOCK_K: tl.constexpr):
    """0..BLOCK_K-1 in int64: a K stride times k passes 2^31 elements for a column-major operand
    (stride 2^30, k = 2), so every offset a stride multiplies is computed in int64."""
    return tl.arange(0, BLOCK_K).to(tl.int64)


@triton.jit
def k_step(stride, BLOCK_K: tl.constexpr):
    """The K loop's pointer step, BLOCK_K * stride, in int64 (see k_offsets)."""
    return tl.full((), BLOCK_K, tl.int64) * stride


@triton.jit
def dot_acc(a, b, acc, DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    """acc + a @ b, with the operands upcast to fp32 where the interpreter's bf16 dot is wrong
    (see _triton_compat.dot_upcast_needed)."""
    if DOT_UPCAST:
        a = a.to(tl.float32)
        b = b.to(tl.float32)
    return tl.dot(a, b, acc, input_precision=INPUT_PRECISION)


@triton.jit
def to_storage(x, dtype: tl.constexpr):
    """An fp32 tile cast to the storage dtype, rounded to nearest even as a GPU rounds. Under the
    interpreter, whose bf16 cast truncates (see _triton_compat.BF16_CAST_TRUNCATES), the rounding is
    done on the fp32 bits first, so the cast is exact; a GPU compiles the plain cast only."""
    if _ROUND_BF16_BITS and dtype == tl.bfloat16:
        bits = x.to(tl.uint32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # NaN stays NaN, overflow goes to Inf
        x = bits.to(tl.float32, bitcast=True)
    return x.to(dtype)


@triton.jit
def saved_rows(ptr, offs_m, M, layer, WIDTH: tl.constexpr):
    """Row pointers (BLOCK_M, 1) into layer `layer` of a (layers, M, WIDTH) buffer, in int64."""
    return ptr + (offs_m[:, None] + tl.full((), layer, tl.int64) * M) * WIDTH


# The largest M bucket: every M past it (long prefills, training batches) shares one tuning.
M_BUCKET_MAX = 16384


def m_bucket(M: int) -> int:
    """Autotune key for M: the next power of two (capped at M_BUCKET_MAX), so decode, prefill and
    training sizes tune separately without re-tuning for every token count."""
    return min(triton.next_power_of_2(max(M, 1)), M_BUCKET_MAX)


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

    The kernels take strides, so any 2-D layout works; only leading dims need folding. M is
    spelled out: reshape(-1, 0) is ambiguous when K = 0.
    """
    return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])
