"""gated_up_fp8: act(x @ Wg.T * scales) * (x @ Wu.T * scales) with e4m3 weights, in one kernel;
gated_mlp_fp8 adds the down projection.

The two forms are linear_act_fp8's (W8A8, W8A16; see _fp8_common). Both products share every
loaded tile of x; scales, activation and product act on the two fp32 accumulators in the epilogue.
"""

import torch
import triton
import triton.language as tl

from .._triton_compat import autotune, dot_upcast_needed
from ..activations import get_activation
from ..quantize import FP8_DTYPE, check_scale, quantize_activations_fp8
from . import _fp8_common as fp8
from ._gemm_launch import launch, num_sms
from ._kernel_spec import KernelSpec
from ._matmul_common import k_step, m_bucket, to_storage
from ._tile_loads import gated_tile_start, load_gated_k_tiles
from ._tuning import Exclusion, device_pruner
from .fp8_linear import linear_act_fp8

_SHARED = fp8.shared_bytes(operand_tiles=2)
# Measured with python -m fused_mlp.aot --candidates (see docs/fp8.md).
# Four fp32 accumulators in W8A8 (gate and up, each promoted from wgmma's imprecise one), two
# up-cast weight tiles in W8A16: the large tiles spill (erf-GELU epilogue, Triton 3.9).
_EXCLUDED = (
    Exclusion(("sm_90",), ("fp8",), (128, 128, 128, 8, 4), "spills (40 B at 255 registers)"),
    Exclusion(("sm_90",), ("fp8",), (128, 128, 128, 8, 3), "spills (40 B at 255 registers)"),
    Exclusion(("sm_90",), ("fp8",), (64, 128, 128, 4, 4), "spills (20 B at 255 registers)"),
    Exclusion(("sm_90", "sm_80"), ("bf16", "fp16"), (64, 128, 64, 4, 4), "spills (56-84 B at 255 registers)"),
    Exclusion(("sm_90", "sm_80"), ("bf16", "fp16"), (128, 128, 64, 8, 3), "spills (8 B; 8 KB on sm_80)"),
    Exclusion(("sm_90",), ("bf16", "fp16"), (32, 64, 128, 4, 4), "spills under Triton 3.6.0 (4 B at 168 registers)"),
    # found by the compile-metrics history (fp16 is compiled there; the compile check lets bf16 stand for it)
    Exclusion(("sm_90",), ("fp16",), (16, 32, 256, 4, 5),
              "W8A16 in fp16 spills under Triton 3.6.0 (4 B at 168 registers; bf16: 179, no spill)"),
    Exclusion(("gfx950",), ("bf16", "fp16"), (16, 64, 256, 4, 2, "wpe2", "nk16", "kp1"),
              "W8A16 spills on gfx950 (12 B at 219 VGPRs, Triton 3.9)"),
    Exclusion(("gfx950",), ("bf16", "fp16"), (16, 32, 256, 4, 2, "wpe2", "nk16", "kp1"),
              "W8A16 spills on gfx950 (120 B at 213 VGPRs, Triton 3.9)"),
    # Triton 3.6.0 (the GPU runners'): the next decode tiles spill there too; gfx942 then takes
    # 32x64x128 (140-141 VGPRs under 3.6.0 and 3.9.0), gfx950 64x128x64 (224-246)
    Exclusion(("gfx942",), ("bf16", "fp16"), (16, 32, 256, 4, 2, "wpe2", "nk16", "kp2"),
              "W8A16 spills on gfx942 with Triton 3.6.0 (188 B at 256 VGPRs)"),
    Exclusion(("gfx950",), ("bf16", "fp16"), (16, 128, 128, 4, 2, "wpe2", "nk16", "kp1"),
              "W8A16 spills on gfx950 with Triton 3.6.0 (120 B at 256 VGPRs)"),
    Exclusion(("gfx950",), ("bf16", "fp16"), (32, 64, 128, 4, 2, "wpe2", "nk16", "kp1"),
              "W8A16 spills on gfx950 (16 B with Triton 3.6.0, 40 B with 3.9)"),
)


@triton.jit
def _fp8_gated_kernel(
    # pointers: x (M, K), W_gate and W_up (N, K) e4m3, the fp32 scales of x, W_gate and W_up, out (M, N)
    x_ptr, wg_ptr, wu_ptr, xs_ptr, gs_ptr, us_ptr, out_ptr,
    # sizes (M_BUCKET: the autotune key's M)
    M, N, K, M_BUCKET,
    # strides, in elements
    stride_xm, stride_xk, stride_wgn, stride_wgk, stride_wun, stride_wuk, stride_om, stride_on,
    # what to compute: the form (W8A8 or W8A16), the scales' granularity, the activation
    X_FP8: tl.constexpr, X_ROW_SCALES: tl.constexpr, W_ROW_SCALES: tl.constexpr,
    ACTIVATION: tl.constexpr, DOT_UPCAST: tl.constexpr,
    # the config
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    TMA_OK: tl.constexpr = False,
):
    """One output tile per program (pointer loads, any strides); X_FP8 picks the form as in
    linear_act_fp8. TMA_OK: the shared launcher's flag, always False (no TMA variant)."""
    offs_m, offs_n, offs_k, x_ptrs, wg_ptrs, wu_ptrs, acc_gate, acc_up = gated_tile_start(
        x_ptr, wg_ptr, wu_ptr, M, N, stride_xm, stride_xk, stride_wgn, stride_wgk, stride_wun, stride_wuk,
        BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
    for k0 in range(0, K, BLOCK_K):
        x, wg, wu = load_gated_k_tiles(x_ptrs, wg_ptrs, wu_ptrs, offs_m, offs_n, offs_k, M, N, K - k0)
        wg, wu = fp8.weight_tile(wg, x, X_FP8), fp8.weight_tile(wu, x, X_FP8)
        acc_gate = fp8.form_dot(x, wg, acc_gate, X_FP8, DOT_UPCAST, BLOCK_K)
        acc_up = fp8.form_dot(x, wu, acc_up, X_FP8, DOT_UPCAST, BLOCK_K)
        x_ptrs += k_step(stride_xk, BLOCK_K)
        wg_ptrs += k_step(stride_wgk, BLOCK_K)
        wu_ptrs += k_step(stride_wuk, BLOCK_K)

    if X_FP8:
        acc_gate = fp8.scale_rows(acc_gate, xs_ptr, offs_m, M, X_ROW_SCALES)
        acc_up = fp8.scale_rows(acc_up, xs_ptr, offs_m, M, X_ROW_SCALES)
    acc_gate = fp8.scale_columns(acc_gate, gs_ptr, offs_n, N, W_ROW_SCALES)
    acc_up = fp8.scale_columns(acc_up, us_ptr, offs_n, N, W_ROW_SCALES)
    out = ACTIVATION(acc_gate) * acc_up
    out_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(out_ptrs, to_storage(out, out_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _tuned(form: str):
    return autotune(configs=fp8.configs(form, operand_tiles=2), key=["M_BUCKET", "N", "K"],
                    prune=device_pruner(_SHARED, "x_ptr", _EXCLUDED))(_fp8_gated_kernel)


_KERNELS = {form: _tuned(form) for form in fp8.FORMS}


def _kernel_args(form, x2, w_gate, w_up, x_scales, gate_scales, up_scales, out, activation: str):
    """The kernel's arguments and constexprs for a 2-D x (shared with the compile check)."""
    M, K = x2.shape
    N = w_gate.shape[0]
    wg, wu = fp8.weight_operand(form, w_gate), fp8.weight_operand(form, w_up)
    args = (x2, wg, wu, x_scales if x_scales is not None else gate_scales, gate_scales, up_scales, out,
            M, N, K, m_bucket(M),
            x2.stride(0), x2.stride(1), wg.stride(0), wg.stride(1), wu.stride(0), wu.stride(1),
            out.stride(0), out.stride(1))
    constexprs = dict(X_FP8=form == "w8a8", X_ROW_SCALES=x_scales is not None and x_scales.numel() > 1,
                      W_ROW_SCALES=gate_scales.numel() > 1, ACTIVATION=get_activation(activation).triton_fn,
                      DOT_UPCAST=dot_upcast_needed(x2.dtype), TMA_OK=False)
    return args, constexprs


def gated_up_fp8(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, gate_scale: torch.Tensor,
                 up_scale: torch.Tensor, activation: str = "gelu_tanh", *, x_scale: torch.Tensor | None = None,
                 out_dtype: torch.dtype | None = None, check_scales: bool = True) -> torch.Tensor:
    """act((x @ w_gate.T) * x_scale * gate_scale) * ((x @ w_up.T) * x_scale * up_scale) in one
    Triton kernel (GeGLU with gelu_tanh, SwiGLU with silu), with e4m3 weights.

    w_gate, w_up: (hidden, K) e4m3 (x's encoding for W8A8, float8_e4m3fn for W8A16); gate_scale,
    up_scale: float32, both per output channel ((hidden,) / (hidden, 1)) or both per tensor. x,
    x_scale, out_dtype, check_scales: as in linear_act_fp8 (W8A8 for e4m3 x, W8A16 for bf16/fp16 x).
    """
    from .. import _validate as v

    get_activation(activation)
    v.check_forward_only(x)
    form, x2, x_scales = fp8.check_x(x, x_scale, check_scales)
    N = fp8.check_fp8_weight("w_gate", w_gate, x, x.shape[-1])
    fp8.check_fp8_weight("w_up", w_up, x, x.shape[-1])
    v.check_shape("w_up", w_up.shape, w_gate.shape, "the shape of w_gate")
    gate_scales = fp8.check_weight_scale("gate_scale", gate_scale, w_gate, check_scales)
    up_scales = fp8.check_weight_scale("up_scale", up_scale, w_up, check_scales)
    if (gate_scales.numel() > 1) != (up_scales.numel() > 1) and N > 1:
        raise ValueError(f"gate_scale has {gate_scales.numel()} value(s) and up_scale {up_scales.numel()}: "
                         "both per output channel or both per tensor")
    dtype = fp8.out_dtype_for(form, x, out_dtype)

    M = x2.shape[0]
    out = torch.empty((M, N), dtype=dtype, device=x.device)
    if M > 0 and N > 0:
        args, constexprs = _kernel_args(form, x2, w_gate, w_up, x_scales, gate_scales, up_scales, out, activation)
        launch(_KERNELS[form], args, constexprs, M, N, num_sms(x.device))
    return out.reshape(*x.shape[:-1], N)


def gated_mlp_fp8(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor,
                  gate_scale: torch.Tensor, up_scale: torch.Tensor, down_scale: torch.Tensor,
                  activation: str = "gelu_tanh", *, x_scale: torch.Tensor | None = None,
                  out_dtype: torch.dtype | None = None, check_scales: bool = True) -> torch.Tensor:
    """The GeGLU/SwiGLU MLP with e4m3 weights: gated_up_fp8, then the down projection.

    W8A8 (e4m3 x): the hidden activations come out of the gated kernel in bf16 and are quantized
    per token in x's encoding (amax / largest, as quantize_fp8 does; a few torch ops between the
    kernels) for the W8A8 down projection. W8A16 (bf16/fp16 x): the hidden stays in x's dtype.
    w_down: (dim_out, hidden) e4m3 in the other weights' encoding, with down_scale per output
    channel or per tensor.
    """
    form = fp8.form_of(x)
    if isinstance(w_gate, torch.Tensor) and w_gate.dim() == 2:  # else gated_up_fp8 names the problem
        # w_down's faults, before any kernel runs (its scale values are checked by linear_act_fp8)
        fp8.check_fp8_weight("w_down", w_down, x, w_gate.shape[0], "the hidden size w_gate.shape[0]")
        check_scale("down_scale", down_scale, w_down.shape[0], "w_down (output channels)", check_values=False)
    hidden_dtype = torch.bfloat16 if form == "w8a8" else x.dtype
    hidden = gated_up_fp8(x, w_gate, w_up, gate_scale, up_scale, activation, x_scale=x_scale,
                          out_dtype=hidden_dtype, check_scales=check_scales)
    if form == "w8a8":
        hidden, hidden_scale = quantize_activations_fp8(hidden, "row", fp8_dtype=x.dtype)
        return linear_act_fp8(hidden, w_down, down_scale, None, "none", x_scale=hidden_scale,
                              out_dtype=out_dtype, check_scales=check_scales)
    return linear_act_fp8(hidden, w_down, down_scale, None, "none", out_dtype=out_dtype, check_scales=check_scales)


def _compile_example(form: str):
    """The gate and up projections of a Llama-3-8B MLP (4096 -> 14336) on meta tensors: prefill
    (8192 tokens) for W8A8, decode (16 tokens) for W8A16; per-token and per-channel scales."""
    def example(dtype, activation):
        """dtype: x's (W8A8: an e4m3 one, the weights' too)."""
        M, K, N = (8192 if form == "w8a8" else 16), 4096, 14336
        x2 = torch.empty(M, K, dtype=dtype, device="meta")
        w_dtype = dtype if form == "w8a8" else FP8_DTYPE
        w_gate, w_up = (torch.empty(N, K, dtype=w_dtype, device="meta") for _ in range(2))
        x_scales = torch.empty(M, dtype=torch.float32, device="meta") if form == "w8a8" else None
        gate_scales, up_scales = (torch.empty(N, dtype=torch.float32, device="meta") for _ in range(2))
        out = torch.empty(M, N, dtype=torch.bfloat16 if form == "w8a8" else dtype, device="meta")
        return _kernel_args(form, x2, w_gate, w_up, x_scales, gate_scales, up_scales, out, activation)
    return example


KERNELS = (
    KernelSpec("gated_up_fp8", "w8a8", _KERNELS["w8a8"], fp8.candidates("w8a8", operand_tiles=2),
               _compile_example("w8a8"), _SHARED, _EXCLUDED, dtypes=("fp8",), needs=("fp8",)),
    KernelSpec("gated_up_fp8", "w8a16", _KERNELS["w8a16"], fp8.candidates("w8a16", operand_tiles=2),
               _compile_example("w8a16"), _SHARED, _EXCLUDED, dtypes=("bf16", "fp16")),
)
