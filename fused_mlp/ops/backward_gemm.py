"""The backward kernels of linear_act and the gated MLP: GEMMs over any strides (so that every
transpose a backward needs is a view), with the activation's derivative in their epilogue, and the
elementwise passes that turn an upstream gradient into the pre-activation's.

How a backward launch is chosen:
    variant   the tile variant only (pointer loads, any strides: the operands are transposed views,
              which TMA descriptors do not take); the epilogue is a constexpr (each GEMM compiles its own)
    config    an autotuner keyed on the bucketed M, N and K (the token count is M in one GEMM, K in another)
    fallback  configs pruned per device (shared memory, the measured exclusions in _config_tables)

Kernels (QuACK's gemm_dact / gemm_dgated, cuBLASLt's DGELU_BGRAD):
    _bwd_gemm_kernel    C = A @ B (+ A2 @ B2, a second K loop into the same accumulator), epilogue:
                        "none"    store C
                        "dact"    Z = C + bias; dZ = act'(Z) * dY stored; dZ's column sums per row block
                        "dgated"  dH = C; dG = dH * U * act'(G), dU = dH * act(G), H = act(G) * U stored,
                                  half the tile's columns at a time (registers: see the exclusions)
    _bwd_gemm_pair_kernel  C1 = A @ B1, C2 = A @ B2, one pass over A (dWg and dWu from one pass over x)
    _elementwise_backward_kernel  "dact": dZ = act'(Z) * dY and its column sums per row block (the
                        bias gradient's first pass); "dgated": dG, dU from dH and the saved G, U
Column sums are written per row block into an fp32 split buffer and summed by a second pass:
deterministic, no atomics.
"""
import torch
import triton
import triton.language as tl

from .. import _validate as v
from .._triton_compat import INTERPRETER, autotune, dot_upcast_needed
from ..activations import ACTIVATIONS, get_activation
from ._config_tables import (BACKWARD_EPILOGUES, BACKWARD_EXCLUDED, BACKWARD_TILES, ELEMENTWISE_EXCLUDED,
                             ELEMENTWISE_TILES, PAIR_EXCLUDED, PAIR_TILES)
from ._kernel_spec import EXAMPLE_DIM, EXAMPLE_HIDDEN, EXAMPLE_TOKENS, KernelSpec
from ._matmul_common import dot_acc, grouped_tile, k_offsets, k_step, m_bucket, split_columns, to_storage
from ._tuning import INTERPRETER_CONFIGS, _gemm_config, device_pruner, gemm_shared_bytes

# Epilogues of _bwd_gemm_kernel (constexpr values)
EPILOGUE_NONE: tl.constexpr = tl.constexpr(BACKWARD_EPILOGUES["none"])
EPILOGUE_DACT: tl.constexpr = tl.constexpr(BACKWARD_EPILOGUES["dact"])
EPILOGUE_DGATED: tl.constexpr = tl.constexpr(BACKWARD_EPILOGUES["dgated"])
_EPILOGUES = BACKWARD_EPILOGUES

_SHARED = gemm_shared_bytes(operand_tiles=1)
_SHARED_PAIR = gemm_shared_bytes(operand_tiles=2)
# measured (see _config_tables)
_EXCLUDED, _PAIR_EXCLUDED, _ELEMENTWISE_EXCLUDED = BACKWARD_EXCLUDED, PAIR_EXCLUDED, ELEMENTWISE_EXCLUDED


def backward_candidates(tiles=BACKWARD_TILES) -> list:
    return [_gemm_config(*tile) for tile in tiles]


def _bwd_configs(tiles=BACKWARD_TILES):
    return [INTERPRETER_CONFIGS["tile"]] if INTERPRETER else backward_candidates(tiles)


def _elementwise_candidates():
    """Tiles of the elementwise passes (see ELEMENTWISE_TILES)."""
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=1) for bm, bn, w in ELEMENTWISE_TILES]


_INTERPRETER_ELEMENTWISE = triton.Config({"BLOCK_M": 32, "BLOCK_N": 32}, num_warps=4)


def _elementwise_configs():
    return [_INTERPRETER_ELEMENTWISE] if INTERPRETER else _elementwise_candidates()


def _no_shared(config, dtype_bytes: int, constexprs: dict) -> int:
    return 0


@triton.jit
def _tile_ptrs(ptr, offs_r, offs_c, stride_r, stride_c):
    return ptr + offs_r[:, None] * stride_r + offs_c[None, :] * stride_c


@triton.jit
def _k_loop(acc, a_ptr, b_ptr, offs_m, offs_n, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
            DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr, BLOCK_K: tl.constexpr):
    """acc += A[offs_m, :] @ B[:, offs_n] over all of K, masked at every edge."""
    offs_k = k_offsets(BLOCK_K)
    a_ptrs = _tile_ptrs(a_ptr, offs_m, offs_k, stride_am, stride_ak)
    b_ptrs = _tile_ptrs(b_ptr, offs_k, offs_n, stride_bk, stride_bn)
    for k0 in range(0, K, BLOCK_K):
        k_mask = offs_k < K - k0
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & k_mask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_mask[:, None] & (offs_n[None, :] < N), other=0.0)
        acc = dot_acc(a, b, acc, DOT_UPCAST, INPUT_PRECISION)
        a_ptrs += k_step(stride_ak, BLOCK_K)
        b_ptrs += k_step(stride_bk, BLOCK_K)
    return acc


@triton.jit
def _store_column_sums(part_ptr, dz, pid_m, offs_n, N):
    """This row block's column sums of dZ into row pid_m of the (row blocks, N) fp32 split buffer."""
    tl.store(part_ptr + pid_m.to(tl.int64) * N + offs_n, tl.sum(dz, axis=0), mask=offs_n < N)


@triton.jit
def _dgated_tile(dh, g, u, ACTIVATION: tl.constexpr, ACTIVATION_GRAD: tl.constexpr):
    """(dG, dU, H) of one tile, in fp32: H = act(G) * U, so dU = dH * act(G) and dG = act'(G) * dH * U."""
    act_g = ACTIVATION(g)
    return ACTIVATION_GRAD(g, dh * u), dh * act_g, act_g * u


@triton.jit
def _dgated_store(dh, e1_ptr, e2_ptr, c_ptr, c2_ptr, c3_ptr, offs_m, offs_n, M, N,
                  stride_em, stride_en, stride_cm, stride_cn, stride_c3m, stride_c3n,
                  ACTIVATION: tl.constexpr, ACTIVATION_GRAD: tl.constexpr):
    """The dgated epilogue on the columns offs_n of dH (fp32): loads G and U there, stores dG, dU
    (C's strides) and H."""
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    g = tl.load(_tile_ptrs(e1_ptr, offs_m, offs_n, stride_em, stride_en), mask=mask, other=0.0)
    u = tl.load(_tile_ptrs(e2_ptr, offs_m, offs_n, stride_em, stride_en), mask=mask, other=0.0)
    # dH rounds to the storage dtype first, as the unfused backward's dH tensor does
    dh = to_storage(dh, c_ptr.dtype.element_ty).to(tl.float32)
    dg, du, h = _dgated_tile(dh, g.to(tl.float32), u.to(tl.float32), ACTIVATION, ACTIVATION_GRAD)
    tl.store(_tile_ptrs(c_ptr, offs_m, offs_n, stride_cm, stride_cn), to_storage(dg, c_ptr.dtype.element_ty), mask=mask)
    tl.store(_tile_ptrs(c2_ptr, offs_m, offs_n, stride_cm, stride_cn), to_storage(du, c_ptr.dtype.element_ty), mask=mask)
    tl.store(_tile_ptrs(c3_ptr, offs_m, offs_n, stride_c3m, stride_c3n), to_storage(h, c_ptr.dtype.element_ty), mask=mask)


# part_ptr is zeroed before every timed run: a config with smaller row blocks fills more of its rows.
@autotune(configs=_bwd_configs(), key=["M_BUCKET", "N_BUCKET", "K_BUCKET", "EPILOGUE", "TWO_PRODUCTS", "INPUT_PRECISION"],
          prune=device_pruner(_SHARED, "a_ptr", _EXCLUDED), reset_to_zero=["part_ptr"])
@triton.jit
def _bwd_gemm_kernel(
    # pointers. C = A @ B (+ A2 @ B2): A, A2 (M, K | K2), B, B2 (K | K2, N), any strides
    a_ptr, b_ptr, a2_ptr, b2_ptr,
    # epilogue inputs: "dact": E1 = dY (M, N), bias (N,); "dgated": E1 = G, E2 = U (M, N), one stride pair
    e1_ptr, e2_ptr, bias_ptr,
    # outputs: C (M, N); "dact": C = dZ, part = column sums (row blocks, N) fp32; "dgated": C = dG, C2 = dU
    # (C's strides), C3 = H
    c_ptr, c2_ptr, c3_ptr, part_ptr,
    # sizes (the buckets are the autotune key)
    M, N, K, K2, M_BUCKET, N_BUCKET, K_BUCKET,
    # strides, in elements (any: transposed views are fine)
    stride_am, stride_ak, stride_bk, stride_bn, stride_a2m, stride_a2k, stride_b2k, stride_b2n,
    stride_em, stride_en, stride_bias, stride_cm, stride_cn, stride_c3m, stride_c3n,
    # what to compute
    EPILOGUE: tl.constexpr, TWO_PRODUCTS: tl.constexpr, HAS_BIAS: tl.constexpr,
    ACTIVATION: tl.constexpr, ACTIVATION_GRAD: tl.constexpr,
    DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
    # the config
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc = _k_loop(acc, a_ptr, b_ptr, offs_m, offs_n, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  DOT_UPCAST, INPUT_PRECISION, BLOCK_K)
    if TWO_PRODUCTS:
        acc = _k_loop(acc, a2_ptr, b2_ptr, offs_m, offs_n, M, N, K2, stride_a2m, stride_a2k, stride_b2k, stride_b2n,
                      DOT_UPCAST, INPUT_PRECISION, BLOCK_K)

    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    c_ptrs = _tile_ptrs(c_ptr, offs_m, offs_n, stride_cm, stride_cn)
    if EPILOGUE == EPILOGUE_NONE:
        tl.store(c_ptrs, to_storage(acc, c_ptr.dtype.element_ty), mask=mask)
    elif EPILOGUE == EPILOGUE_DACT:
        if HAS_BIAS:
            acc += tl.load(bias_ptr + offs_n * stride_bias, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
        # Round Z as the forward's saved pre-activation is rounded, so both paths agree.
        z = to_storage(acc, c_ptr.dtype.element_ty).to(tl.float32)
        dy = tl.load(_tile_ptrs(e1_ptr, offs_m, offs_n, stride_em, stride_en), mask=mask, other=0.0)
        dz = tl.where(mask, ACTIVATION_GRAD(z, dy.to(tl.float32)), 0.0)
        tl.store(c_ptrs, to_storage(dz, c_ptr.dtype.element_ty), mask=mask)
        if HAS_BIAS:
            _store_column_sums(part_ptr, dz, pid_m, offs_n, N)
    else:
        # Half the columns at a time: the loaded G, U and the three results live for half a tile
        # only (the whole tile at once spilled from 64x64 up).
        HALF_N: tl.constexpr = BLOCK_N // 2
        offs_n_half = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, HALF_N)
        left, right = split_columns(acc, BLOCK_M, BLOCK_N)
        _dgated_store(left, e1_ptr, e2_ptr, c_ptr, c2_ptr, c3_ptr, offs_m, offs_n_half, M, N,
                      stride_em, stride_en, stride_cm, stride_cn, stride_c3m, stride_c3n, ACTIVATION, ACTIVATION_GRAD)
        _dgated_store(right, e1_ptr, e2_ptr, c_ptr, c2_ptr, c3_ptr, offs_m, offs_n_half + HALF_N, M, N,
                      stride_em, stride_en, stride_cm, stride_cn, stride_c3m, stride_c3n, ACTIVATION, ACTIVATION_GRAD)


@autotune(configs=_bwd_configs(PAIR_TILES), key=["M_BUCKET", "N_BUCKET", "K_BUCKET", "INPUT_PRECISION"],
          prune=device_pruner(_SHARED_PAIR, "a_ptr", _PAIR_EXCLUDED))
@triton.jit
def _bwd_gemm_pair_kernel(
    # pointers: C1 = A @ B1, C2 = A @ B2; A (M, K), B1, B2 (K, N), C1, C2 (M, N); each A tile is loaded once
    a_ptr, b1_ptr, b2_ptr, c1_ptr, c2_ptr,
    # sizes (the buckets are the autotune key)
    M, N, K, M_BUCKET, N_BUCKET, K_BUCKET,
    # strides, in elements (any: transposed views are fine)
    stride_am, stride_ak, stride_b1k, stride_b1n, stride_b2k, stride_b2n,
    stride_c1m, stride_c1n, stride_c2m, stride_c2n,
    # the dot's precision
    DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
    # the config
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = k_offsets(BLOCK_K)
    a_ptrs = _tile_ptrs(a_ptr, offs_m, offs_k, stride_am, stride_ak)
    b1_ptrs = _tile_ptrs(b1_ptr, offs_k, offs_n, stride_b1k, stride_b1n)
    b2_ptrs = _tile_ptrs(b2_ptr, offs_k, offs_n, stride_b2k, stride_b2n)
    acc1 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc2 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_mask = offs_k < K - k0
        b_mask = k_mask[:, None] & (offs_n[None, :] < N)
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & k_mask[None, :], other=0.0)
        acc1 = dot_acc(a, tl.load(b1_ptrs, mask=b_mask, other=0.0), acc1, DOT_UPCAST, INPUT_PRECISION)
        acc2 = dot_acc(a, tl.load(b2_ptrs, mask=b_mask, other=0.0), acc2, DOT_UPCAST, INPUT_PRECISION)
        a_ptrs += k_step(stride_ak, BLOCK_K)
        b1_ptrs += k_step(stride_b1k, BLOCK_K)
        b2_ptrs += k_step(stride_b2k, BLOCK_K)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(_tile_ptrs(c1_ptr, offs_m, offs_n, stride_c1m, stride_c1n), to_storage(acc1, c1_ptr.dtype.element_ty), mask=mask)
    tl.store(_tile_ptrs(c2_ptr, offs_m, offs_n, stride_c2m, stride_c2n), to_storage(acc2, c2_ptr.dtype.element_ty), mask=mask)


@autotune(configs=_elementwise_configs(), key=["M_BUCKET", "N", "GATED", "STORE_DZ"], reset_to_zero=["part_ptr"],
          prune=device_pruner(_no_shared, "dy_ptr", _ELEMENTWISE_EXCLUDED))
@triton.jit
def _elementwise_backward_kernel(
    # pointers, all (M, N) but part: "dact" (GATED False): dY, Z in, dZ out, column sums into part
    # (row blocks, N) fp32 when HAS_BIAS; "dgated": dH (as dy), G (as z), U in, dG (as dz), dU out
    dy_ptr, z_ptr, u_ptr, dz_ptr, du_ptr, part_ptr,
    # sizes (M_BUCKET: the autotune key's M)
    M, N, M_BUCKET,
    # strides, in elements (U shares Z's, dU dZ's)
    stride_dym, stride_dyn, stride_zm, stride_zn, stride_dzm, stride_dzn,
    # what to compute
    GATED: tl.constexpr, HAS_BIAS: tl.constexpr, STORE_DZ: tl.constexpr,
    ACTIVATION: tl.constexpr, ACTIVATION_GRAD: tl.constexpr,
    # the config
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid_m = tl.program_id(0)
    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    dy = tl.load(_tile_ptrs(dy_ptr, offs_m, offs_n, stride_dym, stride_dyn), mask=mask, other=0.0).to(tl.float32)
    z = tl.load(_tile_ptrs(z_ptr, offs_m, offs_n, stride_zm, stride_zn), mask=mask, other=0.0).to(tl.float32)
    if GATED:
        u = tl.load(_tile_ptrs(u_ptr, offs_m, offs_n, stride_zm, stride_zn), mask=mask, other=0.0).to(tl.float32)
        dg, du, _ = _dgated_tile(dy, z, u, ACTIVATION, ACTIVATION_GRAD)
        tl.store(_tile_ptrs(dz_ptr, offs_m, offs_n, stride_dzm, stride_dzn), to_storage(dg, dz_ptr.dtype.element_ty), mask=mask)
        tl.store(_tile_ptrs(du_ptr, offs_m, offs_n, stride_dzm, stride_dzn), to_storage(du, du_ptr.dtype.element_ty), mask=mask)
    else:
        dz = tl.where(mask, ACTIVATION_GRAD(z, dy), 0.0)
        if STORE_DZ:
            tl.store(_tile_ptrs(dz_ptr, offs_m, offs_n, stride_dzm, stride_dzn), to_storage(dz, dz_ptr.dtype.element_ty),
                     mask=mask)
        if HAS_BIAS:
            _store_column_sums(part_ptr, dz, pid_m, offs_n, N)


# ---- launchers -------------------------------------------------------------------------------

def _precision(t):
    return dict(DOT_UPCAST=dot_upcast_needed(t.dtype), INPUT_PRECISION=v.dot_precision(t.dtype))


def _gemm_grid(M, N):
    return lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)


# The smallest BLOCK_M any config of the GEMM or the elementwise pass has: the split buffer's row block.
_SMALLEST_BLOCK_M = min(c.kwargs["BLOCK_M"] for c in (*backward_candidates(), *_elementwise_candidates(),
                                                        INTERPRETER_CONFIGS["tile"], _INTERPRETER_ELEMENTWISE))


def _part_buffer(M, N, device, block_m_min: int = _SMALLEST_BLOCK_M):
    """The column sums' split buffer: one fp32 row per row block of the smallest BLOCK_M any config
    has (a config with larger row blocks fills the first rows only; the rest stay 0)."""
    return torch.zeros((triton.cdiv(M, block_m_min), N), dtype=torch.float32, device=device)


def _no_part(device):
    """The split buffer's stand-in when no column sums are wanted (the autotuner zeroes it, so it
    must be no tensor the call reads or returns)."""
    return torch.zeros(1, dtype=torch.float32, device=device)


def _gemm_args(a, b, out, *, a2=None, b2=None, e1=None, e2=None, bias=None, c2=None, c3=None, part=None):
    M, K = a.shape
    N = b.shape[1]
    K2 = a2.shape[1] if a2 is not None else 0
    a2_, b2_ = (a2, b2) if a2 is not None else (a, b)
    e1_, e2_ = (e1 if e1 is not None else out), (e2 if e2 is not None else out)
    c3_ = c3 if c3 is not None else out
    args = (a, b, a2_, b2_, e1_, e2_, bias if bias is not None else out, out,
            c2 if c2 is not None else out, c3_, part if part is not None else _no_part(out.device),
            M, N, K, K2, m_bucket(M), m_bucket(N), m_bucket(K),
            a.stride(0), a.stride(1), b.stride(0), b.stride(1), a2_.stride(0), a2_.stride(1),
            b2_.stride(0), b2_.stride(1), e1_.stride(0), e1_.stride(1),
            bias.stride(0) if bias is not None else 0, out.stride(0), out.stride(1), c3_.stride(0), c3_.stride(1))
    return args


def _launch_gemm(args, M, N, constexprs):
    if M > 0 and N > 0:
        _bwd_gemm_kernel[_gemm_grid(M, N)](*args, **constexprs)


def matmul(a, b, out_dtype=None, a2=None, b2=None):
    """a @ b (+ a2 @ b2) into a new (M, N) tensor: fp32 accumulation, one cast at the store."""
    M, N = a.shape[0], b.shape[1]
    out = torch.empty((M, N), dtype=out_dtype or a.dtype, device=a.device)
    constexprs = dict(EPILOGUE=_EPILOGUES["none"], TWO_PRODUCTS=a2 is not None, HAS_BIAS=False,
                      ACTIVATION=get_activation("none").triton_fn, ACTIVATION_GRAD=get_activation("none").triton_grad,
                      **_precision(a))
    _launch_gemm(_gemm_args(a, b, out, a2=a2, b2=b2), M, N, constexprs)
    return out


def matmul_dact(a, b, bias, dy, activation: str):
    """The recompute path of linear_act's backward: Z = a @ b + bias again, and in the epilogue
    dZ = act'(Z) * dY; returns (dZ, bias gradient in fp32 or None)."""
    M, N = a.shape[0], b.shape[1]
    dz = torch.empty((M, N), dtype=a.dtype, device=a.device)
    part = _part_buffer(M, N, a.device) if bias is not None else None
    act = get_activation(activation)
    constexprs = dict(EPILOGUE=_EPILOGUES["dact"], TWO_PRODUCTS=False, HAS_BIAS=bias is not None,
                      ACTIVATION=act.triton_fn, ACTIVATION_GRAD=act.triton_grad, **_precision(a))
    _launch_gemm(_gemm_args(a, b, dz, e1=dy, bias=bias, part=part), M, N, constexprs)
    return dz, (part.sum(0) if part is not None else None)


def matmul_dgated(dy, w_down, g, u, activation: str):
    """dH = dy @ w_down with the gated derivative in the epilogue: returns dGU (M, 2H) = [dG dU]
    and H = act(G) * U (the down projection's input, for its weight gradient)."""
    M, H = dy.shape[0], w_down.shape[1]
    dgu = torch.empty((M, 2 * H), dtype=dy.dtype, device=dy.device)
    h = torch.empty((M, H), dtype=dy.dtype, device=dy.device)
    act = get_activation(activation)
    constexprs = dict(EPILOGUE=_EPILOGUES["dgated"], TWO_PRODUCTS=False, HAS_BIAS=False,
                      ACTIVATION=act.triton_fn, ACTIVATION_GRAD=act.triton_grad, **_precision(dy))
    _launch_gemm(_gemm_args(dy, w_down, dgu[:, :H], e1=g, e2=u, c2=dgu[:, H:], c3=h), M, H, constexprs)
    return dgu, h


def matmul_pair(a, b1, b2, out=None):
    """(a @ b1, a @ b2), each tile of a loaded once for both; `out`: two (M, N) tensors (any
    strides, e.g. transposed views) to write them into instead of new ones."""
    M, N = a.shape[0], b1.shape[1]
    c1, c2 = out if out is not None else (torch.empty((M, N), dtype=a.dtype, device=a.device) for _ in range(2))
    if M > 0 and N > 0:
        _bwd_gemm_pair_kernel[_gemm_grid(M, N)](
            a, b1, b2, c1, c2, M, N, a.shape[1], m_bucket(M), m_bucket(N), m_bucket(a.shape[1]),
            a.stride(0), a.stride(1), b1.stride(0), b1.stride(1), b2.stride(0), b2.stride(1),
            c1.stride(0), c1.stride(1), c2.stride(0), c2.stride(1), **_precision(a))
    return c1, c2


def _elementwise(dy, z, u, dz, du, part, activation, gated, store_dz):
    M, N = dy.shape
    if M == 0 or N == 0:
        return
    act = get_activation(activation)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))
    dz_ = dz if dz is not None else dy
    _elementwise_backward_kernel[grid](
        dy, z, u if u is not None else z, dz_, du if du is not None else dz_,
        part if part is not None else _no_part(dy.device),
        M, N, m_bucket(M), dy.stride(0), dy.stride(1), z.stride(0), z.stride(1), dz_.stride(0), dz_.stride(1),
        GATED=gated, HAS_BIAS=part is not None, STORE_DZ=store_dz,
        ACTIVATION=act.triton_fn, ACTIVATION_GRAD=act.triton_grad)


def dact(dy, z, activation: str, bias_grad: bool):
    """dZ = act'(Z) * dY in one pass that also sums its columns: (dZ, bias gradient in fp32 or
    None). With activation 'none' dZ is dY itself and only the sums are computed."""
    M, N = dy.shape
    store = activation != "none"
    dz = torch.empty((M, N), dtype=dy.dtype, device=dy.device) if store else dy
    part = _part_buffer(M, N, dy.device) if bias_grad else None
    if store or bias_grad:
        _elementwise(dy, z if z is not None else dy, None, dz if store else None, None, part, activation, False, store)
    return dz, (part.sum(0) if part is not None else None)


def dgated(dh, g, u, activation: str):
    """[dG dU] (M, 2H) from dH and the saved pre-activations G, U."""
    M, H = dh.shape
    dgu = torch.empty((M, 2 * H), dtype=dh.dtype, device=dh.device)
    _elementwise(dh, g, u, dgu[:, :H], dgu[:, H:], None, activation, True, True)
    return dgu


# ---- the compile check's examples (fused_mlp.aot): a Llama-3-8B MLP's backward at 8192 tokens --------

_TOKENS, _DIM, _HIDDEN = EXAMPLE_TOKENS, EXAMPLE_DIM, EXAMPLE_HIDDEN


def _meta(*shape, dtype):
    return torch.empty(*shape, dtype=dtype, device="meta")


def _gemm_constexprs(epilogue: str, activation: str, a, two_products=False, has_bias=False):
    act = get_activation(activation)
    return dict(EPILOGUE=_EPILOGUES[epilogue], TWO_PRODUCTS=two_products, HAS_BIAS=has_bias,
                ACTIVATION=act.triton_fn, ACTIVATION_GRAD=act.triton_grad, **_precision(a))


def _example_dact(dtype, activation):
    """linear_act's recompute backward: Z = x @ W^T + b again, dZ = act'(Z) * dY and the bias sums."""
    x, w, dy = _meta(_TOKENS, _DIM, dtype=dtype), _meta(_HIDDEN, _DIM, dtype=dtype), _meta(_TOKENS, _HIDDEN, dtype=dtype)
    dz, bias = _meta(_TOKENS, _HIDDEN, dtype=dtype), _meta(_HIDDEN, dtype=dtype)
    part = _part_buffer(_TOKENS, _HIDDEN, "meta")
    args = _gemm_args(x, w.t(), dz, e1=dy, bias=bias, part=part)
    return args, _gemm_constexprs("dact", activation, x, has_bias=True)


def _example_dgated(dtype, activation):
    """gated_mlp's down projection backward: dH = dY @ Wd, then dG, dU and H in the epilogue."""
    dy, w_down = _meta(_TOKENS, _DIM, dtype=dtype), _meta(_DIM, _HIDDEN, dtype=dtype)
    g, u, h = (_meta(_TOKENS, _HIDDEN, dtype=dtype) for _ in range(3))
    dgu = _meta(_TOKENS, 2 * _HIDDEN, dtype=dtype)
    args = _gemm_args(dy, w_down, dgu[:, :_HIDDEN], e1=g, e2=u, c2=dgu[:, _HIDDEN:], c3=h)
    return args, _gemm_constexprs("dgated", activation, dy)


def _example_dx(dtype, activation):
    """dX = dZ @ W (linear_act)."""
    dz, w = _meta(_TOKENS, _HIDDEN, dtype=dtype), _meta(_HIDDEN, _DIM, dtype=dtype)
    return _gemm_args(dz, w, _meta(_TOKENS, _DIM, dtype=dtype)), _gemm_constexprs("none", activation, dz)


def _example_dx_gated(dtype, activation):
    """dX = dG @ Wg + dU @ Wu in one accumulator (the gated ops), dG and dU column halves of one buffer."""
    dgu, wg, wu = _meta(_TOKENS, 2 * _HIDDEN, dtype=dtype), _meta(_HIDDEN, _DIM, dtype=dtype), _meta(_HIDDEN, _DIM, dtype=dtype)
    args = _gemm_args(dgu[:, :_HIDDEN], wg, _meta(_TOKENS, _DIM, dtype=dtype), a2=dgu[:, _HIDDEN:], b2=wu)
    return args, _gemm_constexprs("none", activation, dgu, two_products=True)


def _example_dw(dtype, activation):
    """dW = dZ^T @ x: a transposed view as A, the token count as K."""
    dz, x = _meta(_TOKENS, _HIDDEN, dtype=dtype), _meta(_TOKENS, _DIM, dtype=dtype)
    return _gemm_args(dz.t(), x, _meta(_HIDDEN, _DIM, dtype=dtype)), _gemm_constexprs("none", activation, dz)


def _pair_args(a, b1, b2, c1, c2):
    M, N = a.shape[0], b1.shape[1]
    return (a, b1, b2, c1, c2, M, N, a.shape[1], m_bucket(M), m_bucket(N), m_bucket(a.shape[1]),
            a.stride(0), a.stride(1), b1.stride(0), b1.stride(1), b2.stride(0), b2.stride(1),
            c1.stride(0), c1.stride(1), c2.stride(0), c2.stride(1))


def _example_pair_dw(dtype, activation):
    """dWg^T = x^T @ dG and dWu^T = x^T @ dU from one pass over x, stored into (hidden, dim) weights."""
    x, dgu = _meta(_TOKENS, _DIM, dtype=dtype), _meta(_TOKENS, 2 * _HIDDEN, dtype=dtype)
    dwg, dwu = _meta(_HIDDEN, _DIM, dtype=dtype), _meta(_HIDDEN, _DIM, dtype=dtype)
    return _pair_args(x.t(), dgu[:, :_HIDDEN], dgu[:, _HIDDEN:], dwg.t(), dwu.t()), _precision(x)


def _example_pair_recompute(dtype, activation):
    """recompute=True: G = x @ Wg^T and U = x @ Wu^T again, from one pass over x."""
    x, wg, wu = _meta(_TOKENS, _DIM, dtype=dtype), _meta(_HIDDEN, _DIM, dtype=dtype), _meta(_HIDDEN, _DIM, dtype=dtype)
    g, u = _meta(_TOKENS, _HIDDEN, dtype=dtype), _meta(_TOKENS, _HIDDEN, dtype=dtype)
    return _pair_args(x, wg.t(), wu.t(), g, u), _precision(x)


def _elementwise_args(dy, z, u, dz, du, part):
    M, N = dy.shape
    return (dy, z, u, dz, du, part, M, N, m_bucket(M), dy.stride(0), dy.stride(1), z.stride(0), z.stride(1),
            dz.stride(0), dz.stride(1))


def _example_elementwise_dact(dtype, activation):
    """dZ = act'(Z) * dY and its column sums (linear_act's default backward, with a bias)."""
    dy, z, dz = (_meta(_TOKENS, _HIDDEN, dtype=dtype) for _ in range(3))
    act = get_activation(activation)
    args = _elementwise_args(dy, z, z, dz, dz, _part_buffer(_TOKENS, _HIDDEN, "meta"))
    return args, dict(GATED=False, HAS_BIAS=True, STORE_DZ=True, ACTIVATION=act.triton_fn, ACTIVATION_GRAD=act.triton_grad)


def _example_elementwise_dgated(dtype, activation):
    """dG, dU from dH and the saved G, U (gated_up alone)."""
    dh, g, u = (_meta(_TOKENS, _HIDDEN, dtype=dtype) for _ in range(3))
    dgu = _meta(_TOKENS, 2 * _HIDDEN, dtype=dtype)
    act = get_activation(activation)
    args = _elementwise_args(dh, g, u, dgu[:, :_HIDDEN], dgu[:, _HIDDEN:], _no_part("meta"))
    return args, dict(GATED=True, HAS_BIAS=False, STORE_DZ=True, ACTIVATION=act.triton_fn, ACTIVATION_GRAD=act.triton_grad)


_ELEMENTWISE_DTYPES = ("bf16", "fp16", "fp32")  # no dot: tf32 compiles as fp32
KERNELS = (
    KernelSpec("backward_gemm", "dact", _bwd_gemm_kernel, backward_candidates(), _example_dact, _SHARED, _EXCLUDED,
               activations=tuple(a for a in ACTIVATIONS if a != "none")),
    KernelSpec("backward_gemm", "dgated", _bwd_gemm_kernel, backward_candidates(), _example_dgated, _SHARED, _EXCLUDED),
    # no activation in these epilogues: the dact variant's every-activation compile covers the code
    KernelSpec("backward_gemm", "dx", _bwd_gemm_kernel, backward_candidates(), _example_dx, _SHARED, _EXCLUDED,
               epilogue_covered_by="dact"),
    KernelSpec("backward_gemm", "dx_gated", _bwd_gemm_kernel, backward_candidates(), _example_dx_gated, _SHARED, _EXCLUDED,
               epilogue_covered_by="dact"),
    KernelSpec("backward_gemm", "dw", _bwd_gemm_kernel, backward_candidates(), _example_dw, _SHARED, _EXCLUDED,
               epilogue_covered_by="dact"),
    KernelSpec("backward_gemm_pair", "dw", _bwd_gemm_pair_kernel, backward_candidates(PAIR_TILES), _example_pair_dw,
               _SHARED_PAIR, _PAIR_EXCLUDED),
    KernelSpec("backward_gemm_pair", "recompute", _bwd_gemm_pair_kernel, backward_candidates(PAIR_TILES),
               _example_pair_recompute, _SHARED_PAIR, _PAIR_EXCLUDED, epilogue_covered_by="dw"),
    KernelSpec("backward_elementwise", "dact", _elementwise_backward_kernel, _elementwise_candidates(),
               _example_elementwise_dact, _no_shared, _ELEMENTWISE_EXCLUDED, dtypes=_ELEMENTWISE_DTYPES, tensor_cores=False),
    KernelSpec("backward_elementwise", "dgated", _elementwise_backward_kernel, _elementwise_candidates(),
               _example_elementwise_dgated, _no_shared, _ELEMENTWISE_EXCLUDED, dtypes=_ELEMENTWISE_DTYPES, tensor_cores=False),
)
