"""linear_act: act(x @ weight.T + bias) in one kernel, bias and activation in the GEMM epilogue."""

import torch
import triton
import triton.language as tl

from .. import _validate as v
from .._triton_compat import autotune, dot_upcast_needed
from ..activations import get_activation
from ._kernel_spec import KernelSpec
from ._matmul_common import check_activation_input, grouped_tile, m_bucket, rows_view
from ._tuning import Exclusion, device_pruner, gemm_candidates, gemm_configs, gemm_shared_bytes

_SHARED = gemm_shared_bytes(operand_tiles=1)
# Measured with python -m fused_mlp.aot --candidates under Triton 3.6.0 and 3.9.0 (erf-GELU
# epilogue, the costliest): spill stores per thread at 255 registers.
_EXCLUDED = (
    Exclusion(("sm_90", "sm_80"), ("bf16", "fp16"), (128, 256, 64, 8, 3),
              "spills with the erf-GELU epilogue (116-192 B), on sm_80 with every epilogue"),
    Exclusion(("sm_90",), ("fp32",), (128, 128, 64, 8, 3), "spills in IEEE fp32 (156 B; 8 KB with Triton 3.6)"),
    Exclusion(("sm_90",), ("fp32",), (64, 128, 64, 4, 4), "spills in IEEE fp32 (16 B; 8 KB with Triton 3.6)"),
)


@autotune(configs=gemm_configs(), key=["M_BUCKET", "N", "K", "INPUT_PRECISION"],
          prune=device_pruner(_SHARED, "x_ptr", _EXCLUDED))
@triton.jit
def _linear_act_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    M, N, K, M_BUCKET,
    stride_xm, stride_xk, stride_wn, stride_wk, stride_b, stride_om, stride_on,
    HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
    DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    # int64 row/column offsets: M*K and N*K can pass 2^31 elements.
    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk  # W^T tile (K, N)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_mask = offs_k < K - k0
        x = tl.load(x_ptrs, mask=(offs_m[:, None] < M) & k_mask[None, :], other=0.0)
        w = tl.load(w_ptrs, mask=k_mask[:, None] & (offs_n[None, :] < N), other=0.0)
        if DOT_UPCAST:
            x = x.to(tl.float32)
            w = w.to(tl.float32)
        acc = tl.dot(x, w, acc, input_precision=INPUT_PRECISION)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk

    # Epilogue on the fp32 accumulator; one cast at the store.
    if HAS_BIAS:
        bias = tl.load(b_ptr + offs_n * stride_b, mask=offs_n < N, other=0.0)
        acc += bias.to(tl.float32)[None, :]
    acc = ACTIVATION(acc)
    out_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(
        out_ptrs,
        acc.to(out_ptr.dtype.element_ty),
        mask=(offs_m[:, None] < M) & (offs_n[None, :] < N),
    )


def _kernel_args(x2, weight, bias, out, activation: str) -> tuple[tuple, dict]:
    """The kernel's arguments and constexprs for a 2-D x, shared by the launcher and the compile
    check (fused_mlp.aot), so that both specialise the kernel the same way."""
    M, K = x2.shape
    N = weight.shape[0]
    args = (x2, weight, bias if bias is not None else weight, out,
            M, N, K, m_bucket(M),
            x2.stride(0), x2.stride(1), weight.stride(0), weight.stride(1),
            bias.stride(0) if bias is not None else 0, out.stride(0), out.stride(1))
    constexprs = dict(HAS_BIAS=bias is not None, ACTIVATION=get_activation(activation).triton_fn,
                      DOT_UPCAST=dot_upcast_needed(x2.dtype), INPUT_PRECISION=v.dot_precision(x2.dtype))
    return args, constexprs


def linear_act(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
               activation: str = "gelu_tanh") -> torch.Tensor:
    """act(x @ weight.T + bias) in one Triton kernel.

    x: (..., K); weight: (N, K) as in nn.Linear; bias: (N,) or None. float32, float16 or bfloat16,
    all the same dtype and device. Accumulates in fp32 and applies bias and activation to the fp32
    accumulator before one cast to x.dtype. float32 inputs use TF32 tensor cores only when
    `torch.backends.cuda.matmul.allow_tf32` is set (as torch's own matmul does), IEEE fp32 otherwise.
    """
    get_activation(activation)
    v.check_forward_only(x, weight, bias)
    K, N = check_activation_input(x, {"weight": weight})
    if bias is not None:
        v.check_tensor("bias", bias, ndim=1)
        v.check_same("x", x, bias=bias)
        v.check_shape("bias", bias.shape, (N,), "one value per output feature, weight.shape[0]")

    x2 = rows_view(x)
    M = x2.shape[0]
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    if M > 0 and N > 0:
        args, constexprs = _kernel_args(x2, weight, bias, out, activation)
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
        _linear_act_kernel[grid](*args, **constexprs)
    return out.reshape(*x.shape[:-1], N)


def _compile_example(dtype, activation):
    """A Llama-3-8B up projection at prefill (8192 x 4096 -> 14336), on meta tensors."""
    M, K, N = 8192, 4096, 14336
    x2, weight = torch.empty(M, K, dtype=dtype, device="meta"), torch.empty(N, K, dtype=dtype, device="meta")
    bias, out = torch.empty(N, dtype=dtype, device="meta"), torch.empty(M, N, dtype=dtype, device="meta")
    return _kernel_args(x2, weight, bias, out, activation)


KERNELS = (KernelSpec("linear_act", "tile", _linear_act_kernel, gemm_candidates(), _compile_example, _SHARED,
                      _EXCLUDED),)
