"""gated_up: act(x @ w_gate.T) * (x @ w_up.T) in one kernel; gated_mlp adds the down projection.

How a launch is chosen (as linear_act's; see _gemm_launch, _tuning):
    variant   the tile variant (pointer loads, any strides, any GPU) or the persistent TMA one
              (sm_90+, only when every tensor qualifies for TMA: TMA_OK), told apart by the config
    config    one autotuner over both (BLOCK_N <= 128: two accumulators), keyed on bucketed M, N, K, cached on disk
    fallback  configs pruned per device (shared memory, the measured exclusions in _config_tables)

Both products share every loaded tile of x, and the activation and the product happen on the two
fp32 accumulators in the epilogue, so neither (M, hidden) intermediate ever reaches device memory
(a training forward stores the two pre-activations G and U, for the backward).

The backward (QuACK's gemm_dgated design, kernels in backward_gemm): gated_mlp's down projection
backward dH = dY @ Wd forms dG = dH * U * act'(G), dU = dH * act(G) and H in its epilogue (gated_up
alone: one elementwise pass over dH); dX = dG @ Wg + dU @ Wu is one kernel; dWg and dWu come from
one pass over x. recompute=True recomputes G and U from x (one pass, both products) instead.
"""

import torch
import triton
import triton.language as tl

from .. import _validate as v
from .._triton_compat import autotune, dot_upcast_needed
from ..activations import get_activation
from ._config_tables import GATED_UP_EXCLUDED
from ._kernel_spec import EXAMPLE_DIM, EXAMPLE_HIDDEN, EXAMPLE_TOKENS, KernelSpec
from ._gemm_launch import launch, num_sms, tma_ok
from ._matmul_common import (check_activation_input, dot_acc, grouped_tile, k_step, m_bucket, rows_view,
                             split_columns, to_storage)
from ._tile_loads import gated_tile_start, load_gated_k_tiles
from ._tuning import (PERSISTENT_DTYPES, device_pruner, gemm_candidates, gemm_configs,
                      gemm_shared_bytes, persistent_candidates)
from . import backward_gemm
from ._autograd import refuse_double_backward, trains
from .linear_act import _forward as linear_act_forward
from .linear_act import linear_act

_SHARED = gemm_shared_bytes(operand_tiles=2)
_EXCLUDED = GATED_UP_EXCLUDED  # measured (see _config_tables)


@triton.jit
def _tile_program(
    # pointers and sizes (as _gated_up_kernel's)
    x_ptr, wg_ptr, wu_ptr, out_ptr, g_ptr, u_ptr,
    M, N, K,
    # strides, in elements
    stride_xm, stride_xk, stride_wgn, stride_wgk, stride_wun, stride_wuk, stride_om, stride_on, stride_pm, stride_pn,
    # what to compute: the epilogue, the dot's precision
    ACTIVATION: tl.constexpr, STORE_PRE: tl.constexpr, DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
    # the config's tile sizes
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    """The tile variant: this program's one output tile, pointer loads (any strides)."""
    offs_m, offs_n, offs_k, x_ptrs, wg_ptrs, wu_ptrs, acc_gate, acc_up = gated_tile_start(
        x_ptr, wg_ptr, wu_ptr, M, N, stride_xm, stride_xk, stride_wgn, stride_wgk, stride_wun, stride_wuk,
        BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
    for k0 in range(0, K, BLOCK_K):
        x, wg, wu = load_gated_k_tiles(x_ptrs, wg_ptrs, wu_ptrs, offs_m, offs_n, offs_k, M, N, K - k0)
        acc_gate = dot_acc(x, wg, acc_gate, DOT_UPCAST, INPUT_PRECISION)
        acc_up = dot_acc(x, wu, acc_up, DOT_UPCAST, INPUT_PRECISION)
        x_ptrs += k_step(stride_xk, BLOCK_K)
        wg_ptrs += k_step(stride_wgk, BLOCK_K)
        wu_ptrs += k_step(stride_wuk, BLOCK_K)

    if STORE_PRE:  # training: the gate and up pre-activations, for the backward
        pre_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
        pre_offs = offs_m[:, None] * stride_pm + offs_n[None, :] * stride_pn
        tl.store(g_ptr + pre_offs, to_storage(acc_gate, g_ptr.dtype.element_ty), mask=pre_mask)
        tl.store(u_ptr + pre_offs, to_storage(acc_up, u_ptr.dtype.element_ty), mask=pre_mask)
    out = ACTIVATION(acc_gate) * acc_up
    # the output's mask after the activation, not before it: at 128x128 the tile runs at the
    # register limit, and a mask kept live across the activation spills (4 B, measured on sm_90)
    out_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(out_ptrs, to_storage(out, out_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _store_gated(gate, up, out_desc, g_desc, u_desc, off_m, off_n, ACTIVATION: tl.constexpr, STORE_PRE: tl.constexpr):
    """The TMA stores of one epilogue subtile: act(G) * U (and G, U themselves, for training)."""
    if STORE_PRE:
        g_desc.store([off_m, off_n], to_storage(gate, g_desc.dtype))
        u_desc.store([off_m, off_n], to_storage(up, u_desc.dtype))
    out_desc.store([off_m, off_n], to_storage(ACTIVATION(gate) * up, out_desc.dtype))


@triton.jit
def _persistent_program(
    # pointers, sizes and the program count (as _gated_up_kernel's)
    x_ptr, wg_ptr, wu_ptr, out_ptr, g_ptr, u_ptr,
    M, N, K, NUM_SMS,
    # row strides only: TMA needs unit inner strides (the launcher checked)
    stride_xm, stride_wgn, stride_wun, stride_om, stride_pm,
    # what to compute: the epilogue, the dot's precision
    ACTIVATION: tl.constexpr, STORE_PRE: tl.constexpr, DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
    # the config: tile sizes, then the persistent variant's
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    EPILOGUE_SUBTILE: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
):
    """The persistent variant (Triton tutorial 09), as in linear_act: NUM_SMS programs walk the
    output tiles; TMA loads one x tile and both weight tiles per K step and stores the output."""
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[stride_xm, 1], block_shape=[BLOCK_M, BLOCK_K])
    wg_desc = tl.make_tensor_descriptor(wg_ptr, shape=[N, K], strides=[stride_wgn, 1], block_shape=[BLOCK_N, BLOCK_K])
    wu_desc = tl.make_tensor_descriptor(wu_ptr, shape=[N, K], strides=[stride_wun, 1], block_shape=[BLOCK_N, BLOCK_K])
    SUB_N: tl.constexpr = BLOCK_N // EPILOGUE_SUBTILE
    out_desc = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[stride_om, 1], block_shape=[BLOCK_M, SUB_N])
    g_desc, u_desc = out_desc, out_desc
    if STORE_PRE:
        g_desc = tl.make_tensor_descriptor(g_ptr, shape=[M, N], strides=[stride_pm, 1], block_shape=[BLOCK_M, SUB_N])
        u_desc = tl.make_tensor_descriptor(u_ptr, shape=[M, N], strides=[stride_pm, 1], block_shape=[BLOCK_M, SUB_N])
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=True, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc_gate = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        acc_up = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            x = x_desc.load([off_m, ki * BLOCK_K])
            wg = wg_desc.load([off_n, ki * BLOCK_K])
            wu = wu_desc.load([off_n, ki * BLOCK_K])
            acc_gate = dot_acc(x, wg.T, acc_gate, DOT_UPCAST, INPUT_PRECISION)
            acc_up = dot_acc(x, wu.T, acc_up, DOT_UPCAST, INPUT_PRECISION)
        if EPILOGUE_SUBTILE == 2:
            # Half the columns at a time: the gating temporaries and the store buffer for half a tile.
            gate_left, gate_right = split_columns(acc_gate, BLOCK_M, BLOCK_N)
            up_left, up_right = split_columns(acc_up, BLOCK_M, BLOCK_N)
            _store_gated(gate_left, up_left, out_desc, g_desc, u_desc, off_m, off_n, ACTIVATION, STORE_PRE)
            _store_gated(gate_right, up_right, out_desc, g_desc, u_desc, off_m, off_n + SUB_N, ACTIVATION, STORE_PRE)
        else:
            _store_gated(acc_gate, acc_up, out_desc, g_desc, u_desc, off_m, off_n, ACTIVATION, STORE_PRE)


@autotune(configs=gemm_configs(operand_tiles=2), key=["M_BUCKET", "N", "K", "INPUT_PRECISION", "TMA_OK"],
          prune=device_pruner(_SHARED, "x_ptr", _EXCLUDED))
@triton.jit
def _gated_up_kernel(
    # pointers: x (M, K), W_gate and W_up (N, K), out (M, N); G and U (M, N, one stride pair): the
    # pre-activations a training forward stores (STORE_PRE)
    x_ptr, wg_ptr, wu_ptr, out_ptr, g_ptr, u_ptr,
    # sizes (M_BUCKET: the autotune key's M) and the persistent variant's program count
    M, N, K, M_BUCKET, NUM_SMS,
    # strides, in elements
    stride_xm, stride_xk, stride_wgn, stride_wgk, stride_wun, stride_wuk, stride_om, stride_on, stride_pm, stride_pn,
    # what to compute: the epilogue, the dot's precision, whether every tensor qualifies for TMA
    ACTIVATION: tl.constexpr, STORE_PRE: tl.constexpr, DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr, TMA_OK: tl.constexpr,
    # the config: tile sizes, then the persistent variant's (tutorial 09)
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    PERSISTENT: tl.constexpr = False, EPILOGUE_SUBTILE: tl.constexpr = 1, WARP_SPECIALIZE: tl.constexpr = False,
):
    """act(x @ Wg^T) * (x @ Wu^T); the config's PERSISTENT picks the variant (see _gemm_launch)."""
    if PERSISTENT:
        tl.static_assert(TMA_OK, "the persistent variant needs tensors that qualify for TMA")
        _persistent_program(x_ptr, wg_ptr, wu_ptr, out_ptr, g_ptr, u_ptr, M, N, K, NUM_SMS,
                            stride_xm, stride_wgn, stride_wun, stride_om, stride_pm,
                            ACTIVATION, STORE_PRE, DOT_UPCAST, INPUT_PRECISION, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                            EPILOGUE_SUBTILE, WARP_SPECIALIZE)
    else:
        _tile_program(x_ptr, wg_ptr, wu_ptr, out_ptr, g_ptr, u_ptr, M, N, K,
                      stride_xm, stride_xk, stride_wgn, stride_wgk, stride_wun, stride_wuk, stride_om, stride_on,
                      stride_pm, stride_pn, ACTIVATION, STORE_PRE, DOT_UPCAST, INPUT_PRECISION, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)


def _kernel_args(x2, w_gate, w_up, out, activation: str, pre=None) -> tuple[tuple, dict]:
    """The kernel's arguments and constexprs for a 2-D x (shared with the compile check). `pre`:
    the (G, U) tensors a training forward stores the pre-activations in (None: the inference kernel)."""
    M, K = x2.shape
    N = w_gate.shape[0]
    g, u = pre if pre is not None else (out, out)
    args = (x2, w_gate, w_up, out, g, u,
            M, N, K, m_bucket(M), num_sms(x2.device),
            x2.stride(0), x2.stride(1), w_gate.stride(0), w_gate.stride(1),
            w_up.stride(0), w_up.stride(1), out.stride(0), out.stride(1), g.stride(0), g.stride(1))
    constexprs = dict(ACTIVATION=get_activation(activation).triton_fn, STORE_PRE=pre is not None,
                      DOT_UPCAST=dot_upcast_needed(x2.dtype), INPUT_PRECISION=v.dot_precision(x2.dtype),
                      TMA_OK=tma_ok(x2, w_gate, w_up, out, g, u))
    return args, constexprs


def _forward(x2, w_gate, w_up, activation: str, store_pre: bool = False):
    """The fused gated projection on a 2-D x: (H, G, U), G and U None unless store_pre."""
    M, N = x2.shape[0], w_gate.shape[0]
    out = torch.empty((M, N), dtype=x2.dtype, device=x2.device)
    pre = tuple(torch.empty((M, N), dtype=x2.dtype, device=x2.device) for _ in range(2)) if store_pre else None
    if M > 0 and N > 0:
        args, constexprs = _kernel_args(x2, w_gate, w_up, out, activation, pre)
        launch(_gated_up_kernel, args, constexprs, M, N, num_sms(x2.device))
    return (out, *(pre or (None, None)))


def _pre_activations(x2, w_gate, w_up, g, u):
    """The saved (G, U), or recomputed from x in one pass over it (recompute=True)."""
    if g is not None:
        return g, u
    return backward_gemm.matmul_pair(x2, w_gate.t(), w_up.t())


def _projection_grads(dgu, x2, w_gate, w_up, needs):
    """(dx, dw_gate, dw_up) from [dG dU] (M, 2H): dX = dG @ Wg + dU @ Wu in one kernel (two K loops
    into one accumulator), dWg and dWu from one pass over x (dW^T = x^T @ dG, stored transposed)."""
    H = w_gate.shape[0]
    dg, du = dgu[:, :H], dgu[:, H:]
    dx = backward_gemm.matmul(dg, w_gate, a2=du, b2=w_up) if needs[0] else None
    dwg = dwu = None
    if needs[1] or needs[2]:
        dwg, dwu = (torch.empty_like(w_gate, memory_format=torch.contiguous_format) for _ in range(2))
        backward_gemm.matmul_pair(x2.t(), dg, du, out=(dwg.t(), dwu.t()))
    return dx, (dwg if needs[1] else None), (dwu if needs[2] else None)


class _GatedUp(torch.autograd.Function):
    """gated_up for training. Saves x and the pre-activations G, U in x.dtype (torch's autograd
    saves x, G, U and act(G)), or only x with recompute."""

    @staticmethod
    def forward(ctx, x2, w_gate, w_up, activation, recompute):
        h, g, u = _forward(x2, w_gate, w_up, activation, store_pre=not recompute)
        ctx.activation = activation
        ctx.save_for_backward(x2, w_gate, w_up, g, u)
        return h

    @staticmethod
    def backward(ctx, dh):
        refuse_double_backward("gated_up")
        x2, w_gate, w_up, g, u = ctx.saved_tensors
        g, u = _pre_activations(x2, w_gate, w_up, g, u)
        dgu = backward_gemm.dgated(dh, g, u, ctx.activation)
        return (*_projection_grads(dgu, x2, w_gate, w_up, ctx.needs_input_grad[:3]), None, None)


class _GatedMLP(torch.autograd.Function):
    """gated_mlp for training. Saves x, G and U (H = act(G) * U is not saved: the down projection's
    backward recomputes it in its epilogue), or only x with recompute."""

    @staticmethod
    def forward(ctx, x2, w_gate, w_up, w_down, activation, recompute):
        h, g, u = _forward(x2, w_gate, w_up, activation, store_pre=not recompute)
        y, _ = linear_act_forward(h, w_down, None, "none")
        ctx.activation = activation
        ctx.save_for_backward(x2, w_gate, w_up, w_down, g, u)
        return y

    @staticmethod
    def backward(ctx, dy):
        refuse_double_backward("gated_mlp")
        x2, w_gate, w_up, w_down, g, u = ctx.saved_tensors
        needs = ctx.needs_input_grad
        g, u = _pre_activations(x2, w_gate, w_up, g, u)
        # dH = dY @ Wd with dG = dH * U * act'(G), dU = dH * act(G) and H itself in the epilogue
        dgu, h = backward_gemm.matmul_dgated(dy, w_down, g, u, ctx.activation)
        dw_down = backward_gemm.matmul(dy.t(), h) if needs[3] else None
        dx, dwg, dwu = _projection_grads(dgu, x2, w_gate, w_up, needs[:3])
        return dx, dwg, dwu, dw_down, None, None


def _check_recompute(recompute) -> None:
    if not isinstance(recompute, bool):
        raise TypeError(f"recompute must be a bool, got {type(recompute).__name__}")


def gated_up(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor,
             activation: str = "gelu_tanh", recompute: bool = False) -> torch.Tensor:
    """act(x @ w_gate.T) * (x @ w_up.T) in one Triton kernel (GeGLU with gelu_tanh, SwiGLU with silu).

    x: (..., K); w_gate, w_up: (hidden, K). Returns (..., hidden) in x.dtype. fp32 accumulation;
    float32 inputs use TF32 only when `torch.backends.cuda.matmul.allow_tf32` is set.
    Differentiable: a training call also stores G = x @ w_gate.T and U = x @ w_up.T for the
    backward; `recompute=True` saves only x and recomputes both there.
    """
    get_activation(activation)
    _check_recompute(recompute)
    K, N = check_activation_input(x, {"w_gate": w_gate, "w_up": w_up})
    x2 = rows_view(x)
    if trains(x, w_gate, w_up):
        out = _GatedUp.apply(x2, w_gate, w_up, activation, recompute)
    else:
        out, _, _ = _forward(x2, w_gate, w_up, activation)
    return out if x.dim() == 2 else out.reshape(*x.shape[:-1], N)


def gated_mlp(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor,
              activation: str = "gelu_tanh", recompute: bool = False) -> torch.Tensor:
    """(act(x @ w_gate.T) * (x @ w_up.T)) @ w_down.T: the GeGLU/SwiGLU MLP in two kernels
    (eager PyTorch launches five: three GEMMs, the activation, the multiply).

    x: (..., dim); w_gate, w_up: (hidden, dim); w_down: (dim_out, hidden). Differentiable, saving
    x, G and U (or only x with `recompute=True`); the backward runs five kernels (see _GatedMLP).
    """
    get_activation(activation)
    _check_recompute(recompute)
    _, hidden_features = check_activation_input(x, {"w_gate": w_gate, "w_up": w_up})
    v.check_tensor("w_down", w_down, ndim=2)
    v.check_same("x", x, w_down=w_down)
    if w_down.shape[1] != hidden_features:
        raise ValueError(
            f"w_down has shape {tuple(w_down.shape)}; expected (dim_out, {hidden_features}), "
            "its in_features being the hidden size w_gate.shape[0]"
        )
    if trains(x, w_gate, w_up, w_down):
        y = _GatedMLP.apply(rows_view(x), w_gate, w_up, w_down, activation, recompute)
        return y if x.dim() == 2 else y.reshape(*x.shape[:-1], w_down.shape[0])
    hidden = gated_up(x, w_gate, w_up, activation)
    return linear_act(hidden, w_down, None, "none")


def _compile_example(dtype, activation, store_pre: bool = False):
    """The gate and up projections of a Llama-3-8B MLP at prefill (8192 x 4096 -> 14336), on meta
    tensors; with `store_pre`, the training forward that also stores G and U."""
    M, K, N = EXAMPLE_TOKENS, EXAMPLE_DIM, EXAMPLE_HIDDEN
    x2 = torch.empty(M, K, dtype=dtype, device="meta")
    w_gate, w_up = (torch.empty(N, K, dtype=dtype, device="meta") for _ in range(2))
    pre = tuple(torch.empty(M, N, dtype=dtype, device="meta") for _ in range(2)) if store_pre else None
    return _kernel_args(x2, w_gate, w_up, torch.empty(M, N, dtype=dtype, device="meta"), activation, pre)


def _training_example(dtype, activation):
    return _compile_example(dtype, activation, store_pre=True)


# The training forward's epilogue is the inference one plus two stores: the inference variant's
# every-activation compile covers the activation code.
KERNELS = (
    KernelSpec("gated_up", "tile", _gated_up_kernel, gemm_candidates(operand_tiles=2), _compile_example,
               _SHARED, _EXCLUDED),
    KernelSpec("gated_up", "persistent", _gated_up_kernel, persistent_candidates(operand_tiles=2), _compile_example,
               _SHARED, _EXCLUDED, dtypes=PERSISTENT_DTYPES, needs=("tma",)),
    KernelSpec("gated_up", "tile-train", _gated_up_kernel, gemm_candidates(operand_tiles=2), _training_example,
               _SHARED, _EXCLUDED, epilogue_covered_by="tile", training_forward=True),
    KernelSpec("gated_up", "persistent-train", _gated_up_kernel, persistent_candidates(operand_tiles=2),
               _training_example, _SHARED, _EXCLUDED, dtypes=PERSISTENT_DTYPES, needs=("tma",),
               epilogue_covered_by="persistent", training_forward=True),
)
