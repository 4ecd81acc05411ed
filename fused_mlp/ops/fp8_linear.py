"""linear_act_fp8: act((x @ W.T) * scales + bias) with e4m3 weights, in one kernel.

Two forms (see _fp8_common): W8A8 (e4m3 x with per-tensor or per-token scales) and W8A16
(bf16/fp16 x, weight-only). Scales, bias and activation are applied to the fp32 accumulator in
the epilogue; one cast at the store.
"""

import torch
import triton
import triton.language as tl

from .._triton_compat import autotune, dot_upcast_needed
from ..activations import get_activation
from ..quantize import FP8_DTYPE
from . import _fp8_common as fp8
from ._gemm_launch import launch, num_sms, tma_ok
from ._kernel_spec import KernelSpec
from ._matmul_common import grouped_tile, k_step, m_bucket, split_columns, to_storage
from ._tile_loads import load_k_tiles, tile_pointers
from ._tuning import Exclusion, device_pruner

_SHARED = fp8.shared_bytes(operand_tiles=1)
# Measured with python -m fused_mlp.aot --candidates (see docs/fp8.md): every
# candidate compiles clean; the persistent ones past the first are held back (see _fp8_common).
_EXCLUDED: tuple[Exclusion, ...] = fp8.held_back_persistent() + (
    Exclusion(("gfx950",), ("bf16", "fp16"), (16, 64, 256, 4, 2, "wpe2", "nk16", "kp1"),
              "W8A16 spills on gfx950 (24 B at 173 VGPRs, Triton 3.9)"),
    Exclusion(("gfx950",), ("bf16", "fp16"), (16, 32, 256, 4, 2, "wpe2", "nk16", "kp1"),
              "W8A16 spills on gfx950 (80 B at 222 VGPRs, Triton 3.9)"),
    Exclusion(("gfx950",), ("bf16", "fp16"), (16, 128, 128, 4, 2, "wpe2", "nk16", "kp1"),
              "W8A16 spills on gfx950 (24 B at 160 VGPRs, Triton 3.9)"),
)


@triton.jit
def _epilogue(acc, xs_ptr, ws_ptr, b_ptr, stride_b, offs_m, offs_n, M, N,
              X_FP8: tl.constexpr, X_ROW_SCALES: tl.constexpr, W_ROW_SCALES: tl.constexpr,
              HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr):
    """On the fp32 accumulator: x's and W's scales, the bias, the activation (both variants)."""
    if X_FP8:
        acc = fp8.scale_rows(acc, xs_ptr, offs_m, M, X_ROW_SCALES)
    acc = fp8.scale_columns(acc, ws_ptr, offs_n, N, W_ROW_SCALES)
    if HAS_BIAS:
        bias = tl.load(b_ptr + offs_n * stride_b, mask=offs_n < N, other=0.0)
        acc += bias.to(tl.float32)[None, :]
    return ACTIVATION(acc)


@triton.jit
def _tile_program(
    # pointers and sizes (as _fp8_linear_kernel's)
    x_ptr, w_ptr, xs_ptr, ws_ptr, b_ptr, out_ptr,
    M, N, K,
    # strides, in elements
    stride_xm, stride_xk, stride_wn, stride_wk, stride_b, stride_om, stride_on,
    # what to compute: the form, the scales' granularity, the epilogue
    X_FP8: tl.constexpr, X_ROW_SCALES: tl.constexpr, W_ROW_SCALES: tl.constexpr,
    HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, DOT_UPCAST: tl.constexpr,
    # the config's tile sizes
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    """The tile variant, both forms: one output tile per program, pointer loads (any strides)."""
    offs_m, offs_n, offs_k, x_ptrs, w_ptrs = tile_pointers(x_ptr, w_ptr, M, N, stride_xm, stride_xk, stride_wn,
                                                           stride_wk, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x, w = load_k_tiles(x_ptrs, w_ptrs, offs_m, offs_n, offs_k, M, N, K - k0)
        acc = fp8.form_dot(x, fp8.weight_tile(w, x, X_FP8), acc, X_FP8, DOT_UPCAST, BLOCK_K)
        x_ptrs += k_step(stride_xk, BLOCK_K)
        w_ptrs += k_step(stride_wk, BLOCK_K)

    acc = _epilogue(acc, xs_ptr, ws_ptr, b_ptr, stride_b, offs_m, offs_n, M, N, X_FP8, X_ROW_SCALES, W_ROW_SCALES,
                    HAS_BIAS, ACTIVATION)
    out_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(out_ptrs, to_storage(acc, out_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _store_part(acc, out_desc, xs_ptr, ws_ptr, b_ptr, stride_b, off_m, off_n, M, N,
                X_ROW_SCALES: tl.constexpr, W_ROW_SCALES: tl.constexpr, HAS_BIAS: tl.constexpr,
                ACTIVATION: tl.constexpr, BLOCK_M: tl.constexpr, WIDTH: tl.constexpr):
    """The epilogue and the TMA store of one subtile, WIDTH columns from off_n (clipped at the
    edges; the scale and bias loads are masked there)."""
    offs_m = off_m + tl.arange(0, BLOCK_M)
    offs_n = off_n + tl.arange(0, WIDTH)
    acc = _epilogue(acc, xs_ptr, ws_ptr, b_ptr, stride_b, offs_m, offs_n, M, N, True, X_ROW_SCALES, W_ROW_SCALES,
                    HAS_BIAS, ACTIVATION)
    out_desc.store([off_m, off_n], to_storage(acc, out_desc.dtype))


@triton.jit
def _persistent_program(
    # pointers, sizes and the program count (as _fp8_linear_kernel's)
    x_ptr, w_ptr, xs_ptr, ws_ptr, b_ptr, out_ptr,
    M, N, K, NUM_SMS,
    # row strides only: TMA needs unit inner strides (the launcher checked)
    stride_xm, stride_wn, stride_b, stride_om,
    # what to compute (W8A8 only): the scales' granularity, the epilogue
    X_ROW_SCALES: tl.constexpr, W_ROW_SCALES: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
    # the config: tile sizes, then the persistent variant's
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    EPILOGUE_SUBTILE: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
):
    """The persistent variant, W8A8 only (linear_act's, Triton tutorial 09): NUM_SMS programs
    walk the output tiles in grouped order; TMA loads the e4m3 x and W tiles (zero-filled past
    the edges) for an e4m3 x e4m3 dot, and stores the output after the scale epilogue. The
    launcher checked every tensor TMA touches qualifies (unit inner stride, 16-byte aligned base
    and row stride: K a multiple of 16 for e4m3)."""
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[stride_xm, 1], block_shape=[BLOCK_M, BLOCK_K])
    w_desc = tl.make_tensor_descriptor(w_ptr, shape=[N, K], strides=[stride_wn, 1], block_shape=[BLOCK_N, BLOCK_K])
    SUB_N: tl.constexpr = BLOCK_N // EPILOGUE_SUBTILE
    out_desc = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[stride_om, 1], block_shape=[BLOCK_M, SUB_N])
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    # flatten: the tile loop and the K loop pipeline as one (the next tile's loads overlap this
    # tile's epilogue)
    for tile in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=True, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            x = x_desc.load([off_m, ki * BLOCK_K])
            w = w_desc.load([off_n, ki * BLOCK_K])
            # W's tile is K-major, as fp8 wgmma wants both operands
            acc = fp8.w8a8_dot(x, w.T, acc, BLOCK_K)
        if EPILOGUE_SUBTILE == 2:
            left, right = split_columns(acc, BLOCK_M, BLOCK_N)
            _store_part(left, out_desc, xs_ptr, ws_ptr, b_ptr, stride_b, off_m, off_n, M, N,
                        X_ROW_SCALES, W_ROW_SCALES, HAS_BIAS, ACTIVATION, BLOCK_M, SUB_N)
            _store_part(right, out_desc, xs_ptr, ws_ptr, b_ptr, stride_b, off_m, off_n + SUB_N, M, N,
                        X_ROW_SCALES, W_ROW_SCALES, HAS_BIAS, ACTIVATION, BLOCK_M, SUB_N)
        else:
            _store_part(acc, out_desc, xs_ptr, ws_ptr, b_ptr, stride_b, off_m, off_n, M, N,
                        X_ROW_SCALES, W_ROW_SCALES, HAS_BIAS, ACTIVATION, BLOCK_M, BLOCK_N)


@triton.jit
def _fp8_linear_kernel(
    # pointers: x (M, K) e4m3 or bf16/fp16, W (N, K) e4m3, their fp32 scales (one, or per row of
    # x / per output channel of W), bias (N,), out (M, N)
    x_ptr, w_ptr, xs_ptr, ws_ptr, b_ptr, out_ptr,
    # sizes (M_BUCKET: the autotune key's M) and the persistent variant's program count
    M, N, K, M_BUCKET, NUM_SMS,
    # strides, in elements
    stride_xm, stride_xk, stride_wn, stride_wk, stride_b, stride_om, stride_on,
    # what to compute: the form (W8A8 or W8A16), the scales' granularity, the epilogue, TMA
    X_FP8: tl.constexpr, X_ROW_SCALES: tl.constexpr, W_ROW_SCALES: tl.constexpr,
    HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, DOT_UPCAST: tl.constexpr, TMA_OK: tl.constexpr,
    # the config: tile sizes, then the persistent variant's (tutorial 09)
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    PERSISTENT: tl.constexpr = False, EPILOGUE_SUBTILE: tl.constexpr = 1, WARP_SPECIALIZE: tl.constexpr = False,
):
    """act((x @ W^T) * scales + b). X_FP8: W8A8 (e4m3 x e4m3 dot); otherwise W8A16 (W's bytes
    up-cast to x's dtype in registers). The config's PERSISTENT picks the variant, as for
    linear_act (see _gemm_launch); W8A16 launches never qualify for it (TMA_OK False)."""
    if PERSISTENT:
        tl.static_assert(TMA_OK and X_FP8, "the persistent variant is W8A8 on tensors that qualify for TMA")
        _persistent_program(x_ptr, w_ptr, xs_ptr, ws_ptr, b_ptr, out_ptr, M, N, K, NUM_SMS,
                            stride_xm, stride_wn, stride_b, stride_om,
                            X_ROW_SCALES, W_ROW_SCALES, HAS_BIAS, ACTIVATION, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                            EPILOGUE_SUBTILE, WARP_SPECIALIZE)
    else:
        _tile_program(x_ptr, w_ptr, xs_ptr, ws_ptr, b_ptr, out_ptr, M, N, K,
                      stride_xm, stride_xk, stride_wn, stride_wk, stride_b, stride_om, stride_on,
                      X_FP8, X_ROW_SCALES, W_ROW_SCALES, HAS_BIAS, ACTIVATION, DOT_UPCAST,
                      BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)


def _tuned(form: str):
    return autotune(configs=fp8.configs(form, persistent=form == "w8a8"), key=["M_BUCKET", "N", "K", "TMA_OK"],
                    prune=device_pruner(_SHARED, "x_ptr", _EXCLUDED))(_fp8_linear_kernel)


# One autotuner per form: each tunes (and caches) its own choices.
_KERNELS = {form: _tuned(form) for form in fp8.FORMS}


def _kernel_args(form, x2, weight, x_scales, w_scales, bias, out, activation: str) -> tuple[tuple, dict]:
    """The kernel's arguments and constexprs for a 2-D x, shared by the launcher and the compile
    check (fused_mlp.aot), so that both specialise the kernel the same way."""
    M, K = x2.shape
    N = weight.shape[0]
    w = fp8.weight_operand(form, weight)
    args = (x2, w, x_scales if x_scales is not None else w_scales, w_scales, bias if bias is not None else w_scales,
            out, M, N, K, m_bucket(M), num_sms(x2.device),
            x2.stride(0), x2.stride(1), w.stride(0), w.stride(1),
            bias.stride(0) if bias is not None else 0, out.stride(0), out.stride(1))
    constexprs = dict(X_FP8=form == "w8a8", X_ROW_SCALES=x_scales is not None and x_scales.numel() > 1,
                      W_ROW_SCALES=w_scales.numel() > 1, HAS_BIAS=bias is not None,
                      ACTIVATION=get_activation(activation).triton_fn, DOT_UPCAST=dot_upcast_needed(x2.dtype),
                      TMA_OK=form == "w8a8" and tma_ok(x2, w, out))
    return args, constexprs


def check_bias(bias, x: torch.Tensor, N: int) -> None:
    from .. import _validate as v

    if bias is None:
        return
    v.check_tensor("bias", bias, ndim=1)
    if bias.device != x.device:
        raise ValueError(f"bias is on {bias.device} but x is on {x.device}; all operands must be on one device")
    v.check_shape("bias", bias.shape, (N,), "one value per output feature, weight.shape[0]")


def linear_act_fp8(x: torch.Tensor, weight: torch.Tensor, weight_scale: torch.Tensor,
                   bias: torch.Tensor | None = None, activation: str = "gelu_tanh", *,
                   x_scale: torch.Tensor | None = None, out_dtype: torch.dtype | None = None,
                   check_scales: bool = True) -> torch.Tensor:
    """act((x @ weight.T) * x_scale * weight_scale + bias) in one Triton kernel, with e4m3 weights.

    weight: (N, K) e4m3; weight_scale: float32, one per output channel ((N,) or (N, 1))
    or one for the tensor ((), (1,)) — what quantize_fp8(w, "row" | "tensor") returns.
    x (..., K) either e4m3 in the weight's encoding (W8A8; x_scale float32 per token ((M,) /
    (M, 1), M the leading dims flattened) or per tensor; float8_e4m3fnuz on MI300X/MI325X,
    float8_e4m3fn elsewhere: native_fp8_dtype(device)) or bfloat16/float16 (W8A16, weight-only;
    no x_scale; the weight in float8_e4m3fn).
    bias: (N,) in any float dtype, added in fp32 after the scales. Output: out_dtype (bf16, fp16
    or fp32), by default bf16 for W8A8 and x.dtype for W8A16. fp32 accumulation.
    check_scales: refuse NaN, Inf, zero, negative and subnormal scales (reads them back: one
    device synchronisation per call; turn it off where the scales are known good).
    """
    from .. import _validate as v

    get_activation(activation)
    v.check_forward_only(x, bias)
    form, x2, x_scales = fp8.check_x(x, x_scale, check_scales)
    N = fp8.check_fp8_weight("weight", weight, x, x.shape[-1])
    w_scales = fp8.check_weight_scale("weight_scale", weight_scale, weight, check_scales)
    check_bias(bias, x, N)
    dtype = fp8.out_dtype_for(form, x, out_dtype)

    M = x2.shape[0]
    out = torch.empty((M, N), dtype=dtype, device=x.device)
    if M > 0 and N > 0:
        args, constexprs = _kernel_args(form, x2, weight, x_scales, w_scales, bias, out, activation)
        launch(_KERNELS[form], args, constexprs, M, N, num_sms(x.device))
    return out.reshape(*x.shape[:-1], N)


def _compile_example(form: str):
    """A Llama-3-8B up projection (4096 -> 14336) on meta tensors: prefill (8192 tokens) for
    W8A8, decode (16 tokens) for W8A16; per-token and per-channel scales, bf16 out."""
    def example(dtype, activation):
        """dtype: x's (W8A8: an e4m3 one, the weight's too)."""
        M, K, N = (8192 if form == "w8a8" else 16), 4096, 14336
        x2 = torch.empty(M, K, dtype=dtype, device="meta")
        weight = torch.empty(N, K, dtype=dtype if form == "w8a8" else FP8_DTYPE, device="meta")
        x_scales = torch.empty(M, dtype=torch.float32, device="meta") if form == "w8a8" else None
        w_scales, bias = torch.empty(N, dtype=torch.float32, device="meta"), torch.empty(N, dtype=torch.bfloat16,
                                                                                          device="meta")
        out = torch.empty(M, N, dtype=torch.bfloat16 if form == "w8a8" else dtype, device="meta")
        return _kernel_args(form, x2, weight, x_scales, w_scales, bias, out, activation)
    return example


KERNELS = (
    KernelSpec("linear_act_fp8", "w8a8", _KERNELS["w8a8"], fp8.candidates("w8a8"), _compile_example("w8a8"),
               _SHARED, _EXCLUDED, dtypes=("fp8",), needs=("fp8",)),
    KernelSpec("linear_act_fp8", "w8a8-persistent", _KERNELS["w8a8"], fp8.persistent_candidates(),
               _compile_example("w8a8"), _SHARED, _EXCLUDED, dtypes=("fp8",), needs=("tma", "fp8")),
    KernelSpec("linear_act_fp8", "w8a16", _KERNELS["w8a16"], fp8.candidates("w8a16"), _compile_example("w8a16"),
               _SHARED, _EXCLUDED, dtypes=("bf16", "fp16")),
)
