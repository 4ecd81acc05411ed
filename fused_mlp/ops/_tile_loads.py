"""The pointer-load start of every tile-variant GEMM kernel (linear_act, gated_up and their FP8
forms): this program's output tile, the pointers of its x and W^T tiles, and their masked loads.

Every offset is int64: M*K and N*K can pass 2^31 elements, and so can a K stride times k
(a column-major operand), so nothing a stride multiplies is computed in int32.
"""

import triton
import triton.language as tl

from ._matmul_common import grouped_tile, k_offsets


@triton.jit
def tile_pointers(x_ptr, w_ptr, M, N, stride_xm, stride_xk, stride_wn, stride_wk,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """This program's output tile (grouped order): its int64 row, column and K offsets and the
    pointers of its first x tile (BLOCK_M, BLOCK_K) and W^T tile (BLOCK_K, BLOCK_N)."""
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = k_offsets(BLOCK_K)
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    return offs_m, offs_n, offs_k, x_ptrs, wt_tile_pointers(w_ptr, offs_n, offs_k, stride_wn, stride_wk)


@triton.jit
def wt_tile_pointers(w_ptr, offs_n, offs_k, stride_wn, stride_wk):
    """Pointers of the (BLOCK_K, BLOCK_N) tile of W^T (W stored (N, K)) at the first K step."""
    return w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk


@triton.jit
def load_wt_tile(w_ptrs, offs_n, offs_k, N, k_left):
    """W^T's tile at this K step (k_left of K still to go), zero past K and past the last
    output column (zeros add nothing to the dot)."""
    return tl.load(w_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)


@triton.jit
def load_k_tiles(x_ptrs, w_ptrs, offs_m, offs_n, offs_k, M, N, k_left):
    """x's and W^T's tiles at this K step (k_left of K still to go), zero past the edges."""
    x = tl.load(x_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
    return x, load_wt_tile(w_ptrs, offs_n, offs_k, N, k_left)


@triton.jit
def gated_tile_start(x_ptr, wg_ptr, wu_ptr, M, N, stride_xm, stride_xk, stride_wgn, stride_wgk, stride_wun,
                     stride_wuk, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     GROUP_M: tl.constexpr):
    """The start of a gated kernel's K loop (gated_up and its FP8 form: one x tile and two W^T
    tiles, gate and up, per K step): tile_pointers' offsets and pointers, the up tile's pointers,
    and the two fp32 accumulators, zeroed."""
    offs_m, offs_n, offs_k, x_ptrs, wg_ptrs = tile_pointers(x_ptr, wg_ptr, M, N, stride_xm, stride_xk, stride_wgn,
                                                            stride_wgk, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
    wu_ptrs = wt_tile_pointers(wu_ptr, offs_n, offs_k, stride_wun, stride_wuk)
    acc_gate = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_up = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    return offs_m, offs_n, offs_k, x_ptrs, wg_ptrs, wu_ptrs, acc_gate, acc_up


@triton.jit
def load_gated_k_tiles(x_ptrs, wg_ptrs, wu_ptrs, offs_m, offs_n, offs_k, M, N, k_left):
    """The x, gate and up tiles of this K step (k_left of K still to go), zero past the edges."""
    x, wg = load_k_tiles(x_ptrs, wg_ptrs, offs_m, offs_n, offs_k, M, N, k_left)
    return x, wg, load_wt_tile(wu_ptrs, offs_n, offs_k, N, k_left)
