"""linear_act: act(x @ weight.T + bias) in one kernel, bias and activation in the GEMM epilogue.

How a launch is chosen (see _gemm_launch, _tuning):
    variant   the tile variant (pointer loads, any strides, any GPU) or the persistent TMA one
              (sm_90+, only when every tensor qualifies for TMA: TMA_OK), told apart by the config
    config    one autotuner over both, keyed on the bucketed M, N, K, the dot precision and TMA_OK, cached on disk
    fallback  configs pruned per device (shared memory, the measured exclusions in _config_tables)
Training: the forward also stores the pre-activation Z (STORE_PRE) unless recompute=True; the
backward (linear_act_backward) forms dZ = act'(Z) * dY with the bias sums in one pass, or in the
epilogue of the recomputed GEMM, then dX and dW as GEMMs over views (backward_gemm).
"""

import torch
import triton
import triton.language as tl

from .. import _validate as v
from .._triton_compat import autotune, dot_upcast_needed
from ..activations import ACTIVATIONS, get_activation
from . import backward_gemm
from ._autograd import refuse_double_backward, trains
from ._config_tables import LINEAR_ACT_EXCLUDED
from ._kernel_spec import EXAMPLE_DIM, EXAMPLE_HIDDEN, EXAMPLE_TOKENS, KernelSpec
from ._gemm_launch import launch, num_sms, tma_ok
from ._matmul_common import (check_activation_input, dot_acc, grouped_tile, k_step, m_bucket, rows_view,
                             split_columns, to_storage)
from ._tile_loads import load_k_tiles, tile_pointers
from ._tuning import (PERSISTENT_DTYPES, device_pruner, gemm_candidates, gemm_configs,
                      gemm_shared_bytes, persistent_candidates)

_SHARED = gemm_shared_bytes(operand_tiles=1)
_EXCLUDED = LINEAR_ACT_EXCLUDED  # measured (see _config_tables)


@triton.jit
def _add_bias(acc, b_ptr, stride_b, offs_n, N, HAS_BIAS: tl.constexpr):
    """The epilogue's first step on the fp32 accumulator: + bias (the pre-activation Z)."""
    if HAS_BIAS:
        bias = tl.load(b_ptr + offs_n * stride_b, mask=offs_n < N, other=0.0)
        acc += bias.to(tl.float32)[None, :]
    return acc


@triton.jit
def _tile_program(
    # pointers and sizes (as _linear_act_kernel's)
    x_ptr, w_ptr, b_ptr, out_ptr, z_ptr,
    M, N, K,
    # strides, in elements
    stride_xm, stride_xk, stride_wn, stride_wk, stride_b, stride_om, stride_on, stride_zm, stride_zn,
    # what to compute: the epilogue, the dot's precision
    HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, STORE_PRE: tl.constexpr,
    DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
    # the config's tile sizes
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    """The tile variant: this program's one output tile, pointer loads (any strides)."""
    offs_m, offs_n, offs_k, x_ptrs, w_ptrs = tile_pointers(x_ptr, w_ptr, M, N, stride_xm, stride_xk, stride_wn,
                                                           stride_wk, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x, w = load_k_tiles(x_ptrs, w_ptrs, offs_m, offs_n, offs_k, M, N, K - k0)
        acc = dot_acc(x, w, acc, DOT_UPCAST, INPUT_PRECISION)
        x_ptrs += k_step(stride_xk, BLOCK_K)
        w_ptrs += k_step(stride_wk, BLOCK_K)

    # Epilogue on the fp32 accumulator; one cast at the store.
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    acc = _add_bias(acc, b_ptr, stride_b, offs_n, N, HAS_BIAS)
    if STORE_PRE:  # training: the pre-activation, for the backward
        tl.store(z_ptr + offs_m[:, None] * stride_zm + offs_n[None, :] * stride_zn, to_storage(acc, z_ptr.dtype.element_ty),
                 mask=mask)
    acc = ACTIVATION(acc)
    out_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(out_ptrs, to_storage(acc, out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _store_part(acc, out_desc, z_desc, b_ptr, stride_b, off_m, off_n, N,
                HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, STORE_PRE: tl.constexpr, WIDTH: tl.constexpr):
    """Bias, activation and the TMA store of one epilogue subtile, WIDTH columns from off_n
    (and of its pre-activation, for training)."""
    acc = _add_bias(acc, b_ptr, stride_b, off_n + tl.arange(0, WIDTH), N, HAS_BIAS)
    if STORE_PRE:
        z_desc.store([off_m, off_n], to_storage(acc, z_desc.dtype))
    out_desc.store([off_m, off_n], to_storage(ACTIVATION(acc), out_desc.dtype))


@triton.jit
def _persistent_program(
    # pointers, sizes and the program count (as _linear_act_kernel's)
    x_ptr, w_ptr, b_ptr, out_ptr, z_ptr,
    M, N, K, NUM_SMS,
    # row strides only: TMA needs unit inner strides (the launcher checked)
    stride_xm, stride_wn, stride_b, stride_om, stride_zm,
    # what to compute: the epilogue, the dot's precision
    HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, STORE_PRE: tl.constexpr,
    DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
    # the config: tile sizes, then the persistent variant's
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    EPILOGUE_SUBTILE: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
):
    """The persistent variant (Triton tutorial 09): NUM_SMS programs walk the output tiles in
    grouped order; TMA loads x and W tiles (zero-filled past the edges) and stores the output
    (clipped at the edges). The launcher checked every tensor qualifies (unit inner stride,
    16-byte aligned base and row stride)."""
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[stride_xm, 1], block_shape=[BLOCK_M, BLOCK_K])
    w_desc = tl.make_tensor_descriptor(w_ptr, shape=[N, K], strides=[stride_wn, 1], block_shape=[BLOCK_N, BLOCK_K])
    SUB_N: tl.constexpr = BLOCK_N // EPILOGUE_SUBTILE
    out_desc = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[stride_om, 1], block_shape=[BLOCK_M, SUB_N])
    z_desc = out_desc
    if STORE_PRE:
        z_desc = tl.make_tensor_descriptor(z_ptr, shape=[M, N], strides=[stride_zm, 1], block_shape=[BLOCK_M, SUB_N])
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    # flatten: the tile loop and the K loop pipeline as one, so the next tile's loads overlap
    # this tile's epilogue.
    for tile in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=True, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            x = x_desc.load([off_m, ki * BLOCK_K])
            w = w_desc.load([off_n, ki * BLOCK_K])
            acc = dot_acc(x, w.T, acc, DOT_UPCAST, INPUT_PRECISION)
        if EPILOGUE_SUBTILE == 2:
            # Half the columns at a time: the epilogue's temporaries and the store buffer for
            # half a tile only.
            left, right = split_columns(acc, BLOCK_M, BLOCK_N)
            _store_part(left, out_desc, z_desc, b_ptr, stride_b, off_m, off_n, N, HAS_BIAS, ACTIVATION, STORE_PRE, SUB_N)
            _store_part(right, out_desc, z_desc, b_ptr, stride_b, off_m, off_n + SUB_N, N, HAS_BIAS, ACTIVATION,
                        STORE_PRE, SUB_N)
        else:
            _store_part(acc, out_desc, z_desc, b_ptr, stride_b, off_m, off_n, N, HAS_BIAS, ACTIVATION, STORE_PRE,
                        BLOCK_N)


@autotune(configs=gemm_configs(), key=["M_BUCKET", "N", "K", "INPUT_PRECISION", "TMA_OK"],
          prune=device_pruner(_SHARED, "x_ptr", _EXCLUDED))
@triton.jit
def _linear_act_kernel(
    # pointers: x (M, K), W (N, K) as nn.Linear stores it, bias (N,), out (M, N); z (M, N): the
    # pre-activation a training forward stores (STORE_PRE)
    x_ptr, w_ptr, b_ptr, out_ptr, z_ptr,
    # sizes (M_BUCKET: the autotune key's M) and the persistent variant's program count
    M, N, K, M_BUCKET, NUM_SMS,
    # strides, in elements
    stride_xm, stride_xk, stride_wn, stride_wk, stride_b, stride_om, stride_on, stride_zm, stride_zn,
    # what to compute: the epilogue, the dot's precision, whether every tensor qualifies for TMA
    HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, STORE_PRE: tl.constexpr,
    DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr, TMA_OK: tl.constexpr,
    # the config: tile sizes, then the persistent variant's (tutorial 09)
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    PERSISTENT: tl.constexpr = False, EPILOGUE_SUBTILE: tl.constexpr = 1, WARP_SPECIALIZE: tl.constexpr = False,
):
    """act(x @ W^T + b); the config's PERSISTENT picks the variant (see _gemm_launch)."""
    if PERSISTENT:
        tl.static_assert(TMA_OK, "the persistent variant needs tensors that qualify for TMA")
        _persistent_program(x_ptr, w_ptr, b_ptr, out_ptr, z_ptr, M, N, K, NUM_SMS,
                            stride_xm, stride_wn, stride_b, stride_om, stride_zm,
                            HAS_BIAS, ACTIVATION, STORE_PRE, DOT_UPCAST, INPUT_PRECISION, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                            EPILOGUE_SUBTILE, WARP_SPECIALIZE)
    else:
        _tile_program(x_ptr, w_ptr, b_ptr, out_ptr, z_ptr, M, N, K,
                      stride_xm, stride_xk, stride_wn, stride_wk, stride_b, stride_om, stride_on, stride_zm, stride_zn,
                      HAS_BIAS, ACTIVATION, STORE_PRE, DOT_UPCAST, INPUT_PRECISION, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)


def _kernel_args(x2, weight, bias, out, activation: str, z=None) -> tuple[tuple, dict]:
    """The kernel's arguments and constexprs for a 2-D x, shared by the launcher and the compile
    check (fused_mlp.aot), so that both specialise the kernel the same way. `z`: where a training
    forward stores the pre-activation (None: not stored, the inference kernel)."""
    M, K = x2.shape
    N = weight.shape[0]
    z_ = z if z is not None else out
    args = (x2, weight, bias if bias is not None else weight, out, z_,
            M, N, K, m_bucket(M), num_sms(x2.device),
            x2.stride(0), x2.stride(1), weight.stride(0), weight.stride(1),
            bias.stride(0) if bias is not None else 0, out.stride(0), out.stride(1), z_.stride(0), z_.stride(1))
    constexprs = dict(HAS_BIAS=bias is not None, ACTIVATION=get_activation(activation).triton_fn,
                      STORE_PRE=z is not None,
                      DOT_UPCAST=dot_upcast_needed(x2.dtype), INPUT_PRECISION=v.dot_precision(x2.dtype),
                      TMA_OK=tma_ok(x2, weight, out, z_))
    return args, constexprs


def _forward(x2, weight, bias, activation: str, store_pre: bool = False):
    """The fused forward on a 2-D x: (out, the pre-activation Z or None)."""
    M, N = x2.shape[0], weight.shape[0]
    out = torch.empty((M, N), dtype=x2.dtype, device=x2.device)
    z = torch.empty((M, N), dtype=x2.dtype, device=x2.device) if store_pre else None
    if M > 0 and N > 0:
        args, constexprs = _kernel_args(x2, weight, bias, out, activation, z)
        launch(_linear_act_kernel, args, constexprs, M, N, num_sms(x2.device))
    return out, z


def linear_act_backward(dy, x2, weight, bias, z, activation: str, needs: tuple[bool, bool, bool]):
    """(dx, dweight, dbias) of act(x2 @ weight.T + bias) for the upstream gradient dy (M, N).

    z is the saved pre-activation, or None to recompute it (recompute=True). dZ = dY * act'(Z)
    comes from one pass that also sums its columns for the bias gradient (saved Z), or from the
    epilogue of the recomputed forward GEMM; dX = dZ @ W and dW = dZ^T @ X are GEMMs on views.
    """
    has_bias = bias is not None and needs[2]
    if activation == "none" or z is not None:
        dz, db = backward_gemm.dact(dy, z, activation, has_bias)
    else:
        dz, db = backward_gemm.matmul_dact(x2, weight.t(), bias if has_bias else None, dy, activation)
    dx = backward_gemm.matmul(dz, weight) if needs[0] else None
    dw = backward_gemm.matmul(dz.t(), x2) if needs[1] else None
    return dx, dw, (db.to(bias.dtype) if db is not None else None)


class _LinearAct(torch.autograd.Function):
    """linear_act for training. Saves x and the pre-activation Z in x.dtype (as torch's own
    autograd saves its input and output), or only x with recompute; nothing extra for 'none'."""

    @staticmethod
    def forward(ctx, x2, weight, bias, activation, recompute):
        save_z = activation != "none" and not recompute
        out, z = _forward(x2, weight, bias, activation, store_pre=save_z)
        ctx.activation = activation
        ctx.save_for_backward(x2, weight, bias, z)
        return out

    @staticmethod
    def backward(ctx, dy):
        refuse_double_backward("linear_act")
        x2, weight, bias, z = ctx.saved_tensors
        dx, dw, db = linear_act_backward(dy, x2, weight, bias, z, ctx.activation, ctx.needs_input_grad[:3])
        return dx, dw, db, None, None


def linear_act(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
               activation: str = "gelu_tanh", recompute: bool = False) -> torch.Tensor:
    """act(x @ weight.T + bias) in one Triton kernel, differentiable.

    x: (..., K); weight: (N, K) as in nn.Linear; bias: (N,) or None. float32, float16 or bfloat16,
    all the same dtype and device. Accumulates in fp32 and applies bias and activation to the fp32
    accumulator before one cast to x.dtype. float32 inputs use TF32 tensor cores only when
    `torch.backends.cuda.matmul.allow_tf32` is set (as torch's own matmul does), IEEE fp32 otherwise.

    When an input requires grad (and grad mode is on) the forward also saves the pre-activation
    for the backward kernels; `recompute=True` saves only x and recomputes x @ weight.T in the
    backward instead. Otherwise the inference kernel runs and nothing is saved.
    """
    get_activation(activation)
    if not isinstance(recompute, bool):
        raise TypeError(f"recompute must be a bool, got {type(recompute).__name__}")
    K, N = check_activation_input(x, {"weight": weight})
    if bias is not None:
        v.check_tensor("bias", bias, ndim=1)
        v.check_same("x", x, bias=bias)
        v.check_shape("bias", bias.shape, (N,), "one value per output feature, weight.shape[0]")

    x2 = rows_view(x)
    if trains(x, weight, bias):
        out = _LinearAct.apply(x2, weight, bias, activation, recompute)
    else:
        out, _ = _forward(x2, weight, bias, activation)
    return out if x.dim() == 2 else out.reshape(*x.shape[:-1], N)


def _compile_example(dtype, activation, store_pre: bool = False):
    """A Llama-3-8B up projection at prefill (8192 x 4096 -> 14336), on meta tensors; with
    `store_pre`, the training forward that also stores Z."""
    M, K, N = EXAMPLE_TOKENS, EXAMPLE_DIM, EXAMPLE_HIDDEN
    x2, weight = torch.empty(M, K, dtype=dtype, device="meta"), torch.empty(N, K, dtype=dtype, device="meta")
    bias, out = torch.empty(N, dtype=dtype, device="meta"), torch.empty(M, N, dtype=dtype, device="meta")
    z = torch.empty(M, N, dtype=dtype, device="meta") if store_pre else None
    return _kernel_args(x2, weight, bias, out, activation, z)


def _training_example(dtype, activation):
    return _compile_example(dtype, activation, store_pre=True)


# The training forward stores Z only for a real activation (for "none" dZ is dY: nothing saved);
# its epilogue is the inference one plus a store, so the inference variant's every-activation
# compile covers the activation code.
_STORES_Z = tuple(a for a in ACTIVATIONS if a != "none")
KERNELS = (
    KernelSpec("linear_act", "tile", _linear_act_kernel, gemm_candidates(), _compile_example, _SHARED, _EXCLUDED),
    KernelSpec("linear_act", "persistent", _linear_act_kernel, persistent_candidates(), _compile_example, _SHARED,
               _EXCLUDED, dtypes=PERSISTENT_DTYPES, needs=("tma",)),
    KernelSpec("linear_act", "tile-train", _linear_act_kernel, gemm_candidates(), _training_example, _SHARED,
               _EXCLUDED, epilogue_covered_by="tile", activations=_STORES_Z, training_forward=True),
    KernelSpec("linear_act", "persistent-train", _linear_act_kernel, persistent_candidates(), _training_example,
               _SHARED, _EXCLUDED, dtypes=PERSISTENT_DTYPES, needs=("tma",), epilogue_covered_by="persistent",
               activations=_STORES_Z, training_forward=True),
)
