"""gated_up: act(x @ w_gate.T) * (x @ w_up.T) in one kernel; gated_mlp adds the down projection.

Both products share every loaded tile of x, and the activation and the product happen on the two
fp32 accumulators in the epilogue, so neither (M, hidden) intermediate ever reaches device memory.
"""

import torch
import triton
import triton.language as tl

from .. import _validate as v
from .._triton_compat import autotune, dot_upcast_needed
from ..activations import get_activation
from ._kernel_spec import KernelSpec
from ._gemm_launch import launch, num_sms, tma_ok
from ._matmul_common import (check_activation_input, grouped_tile, k_step, m_bucket, rows_view,
                             split_columns)
from ._tile_loads import load_k_tiles, load_wt_tile, tile_pointers, wt_tile_pointers
from ._tuning import (PERSISTENT_DTYPES, Exclusion, device_pruner, gemm_candidates, gemm_configs,
                      gemm_shared_bytes, persistent_candidates)
from .linear_act import linear_act

_SHARED = gemm_shared_bytes(operand_tiles=2)
# Measured with python -m fused_mlp.aot --candidates under Triton 3.6.0 and 3.9.0 (erf-GELU
# epilogue, the costliest). Two fp32 accumulators per tile leave little room: spill stores per thread.
_EXCLUDED = (
    Exclusion(("sm_80",), ("bf16", "fp16"), (128, 128, 64, 8, 3), "spills with every epilogue (212 B)"),
    Exclusion(("sm_80",), ("bf16", "fp16"), (64, 128, 64, 4, 4), "spills (8-40 B)"),
    Exclusion(("sm_80",), ("bf16", "fp16", "fp32", "tf32"), (128, 128, 32, 8, 3), "spills (156 B-3 KB)"),
    Exclusion(("sm_90",), ("fp32",), (128, 128, 32, 8, 3), "spills in IEEE fp32 (1.5-1.8 KB)"),
    Exclusion(("sm_90", "sm_80"), ("fp32",), (64, 64, 32, 4, 3), "spills in IEEE fp32 (8-840 B)"),
    Exclusion(("sm_90", "sm_80"), ("fp32",), (16, 64, 64, 4, 3), "spills in IEEE fp32 with Triton 3.9 (8-32 B)"),
    Exclusion(("sm_90",), ("tf32",), (16, 64, 64, 4, 3), "spills with Triton 3.9 (12 B)"),
    Exclusion(("sm_90",), ("bf16", "fp16"), (16, 64, 256, 4, 3), "spills (4-8 B)"),
    # the persistent variant (Triton 3.9): two 128x128 fp32 accumulators are all of one warpgroup's registers
    Exclusion(("sm_90",), ("bf16", "fp16"), (128, 128, 64, 4, 4, "tma", "sub2"),
              "spills with every epilogue (1.2 KB at 255 registers)"),
)


@triton.jit
def _tile_program(
    x_ptr, wg_ptr, wu_ptr, out_ptr, M, N, K,
    stride_xm, stride_xk, stride_wgn, stride_wgk, stride_wun, stride_wuk, stride_om, stride_on,
    ACTIVATION: tl.constexpr, DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    """The tile variant: this program's one output tile, pointer loads (any strides)."""
    offs_m, offs_n, offs_k, x_ptrs, wg_ptrs = tile_pointers(x_ptr, wg_ptr, M, N, stride_xm, stride_xk, stride_wgn,
                                                            stride_wgk, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
    wu_ptrs = wt_tile_pointers(wu_ptr, offs_n, offs_k, stride_wun, stride_wuk)

    acc_gate = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_up = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        x, wg = load_k_tiles(x_ptrs, wg_ptrs, offs_m, offs_n, offs_k, M, N, K - k0)
        wu = load_wt_tile(wu_ptrs, offs_n, offs_k, N, K - k0)
        if DOT_UPCAST:
            x = x.to(tl.float32)
            wg = wg.to(tl.float32)
            wu = wu.to(tl.float32)
        acc_gate = tl.dot(x, wg, acc_gate, input_precision=INPUT_PRECISION)
        acc_up = tl.dot(x, wu, acc_up, input_precision=INPUT_PRECISION)
        x_ptrs += k_step(stride_xk, BLOCK_K)
        wg_ptrs += k_step(stride_wgk, BLOCK_K)
        wu_ptrs += k_step(stride_wuk, BLOCK_K)

    out = ACTIVATION(acc_gate) * acc_up
    out_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(
        out_ptrs,
        out.to(out_ptr.dtype.element_ty),
        mask=(offs_m[:, None] < M) & (offs_n[None, :] < N),
    )


@triton.jit
def _persistent_program(
    x_ptr, wg_ptr, wu_ptr, out_ptr, M, N, K, NUM_SMS,
    stride_xm, stride_wgn, stride_wun, stride_om,
    ACTIVATION: tl.constexpr, DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
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
            if DOT_UPCAST:
                x = x.to(tl.float32)
                wg = wg.to(tl.float32)
                wu = wu.to(tl.float32)
            acc_gate = tl.dot(x, wg.T, acc_gate, input_precision=INPUT_PRECISION)
            acc_up = tl.dot(x, wu.T, acc_up, input_precision=INPUT_PRECISION)
        if EPILOGUE_SUBTILE == 2:
            # Half the columns at a time: the gating temporaries and the store buffer for half a tile.
            gate_left, gate_right = split_columns(acc_gate, BLOCK_M, BLOCK_N)
            up_left, up_right = split_columns(acc_up, BLOCK_M, BLOCK_N)
            out_desc.store([off_m, off_n], (ACTIVATION(gate_left) * up_left).to(out_desc.dtype))
            out_desc.store([off_m, off_n + SUB_N], (ACTIVATION(gate_right) * up_right).to(out_desc.dtype))
        else:
            out_desc.store([off_m, off_n], (ACTIVATION(acc_gate) * acc_up).to(out_desc.dtype))


@autotune(configs=gemm_configs(operand_tiles=2), key=["M_BUCKET", "N", "K", "INPUT_PRECISION", "TMA_OK"],
          prune=device_pruner(_SHARED, "x_ptr", _EXCLUDED))
@triton.jit
def _gated_up_kernel(
    x_ptr, wg_ptr, wu_ptr, out_ptr,
    M, N, K, M_BUCKET, NUM_SMS,
    stride_xm, stride_xk, stride_wgn, stride_wgk, stride_wun, stride_wuk, stride_om, stride_on,
    ACTIVATION: tl.constexpr, DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr, TMA_OK: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    PERSISTENT: tl.constexpr = False, EPILOGUE_SUBTILE: tl.constexpr = 1, WARP_SPECIALIZE: tl.constexpr = False,
):
    """act(x @ Wg^T) * (x @ Wu^T); the config's PERSISTENT picks the variant (see _gemm_launch)."""
    if PERSISTENT:
        tl.static_assert(TMA_OK, "the persistent variant needs tensors that qualify for TMA")
        _persistent_program(x_ptr, wg_ptr, wu_ptr, out_ptr, M, N, K, NUM_SMS,
                            stride_xm, stride_wgn, stride_wun, stride_om,
                            ACTIVATION, DOT_UPCAST, INPUT_PRECISION, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                            EPILOGUE_SUBTILE, WARP_SPECIALIZE)
    else:
        _tile_program(x_ptr, wg_ptr, wu_ptr, out_ptr, M, N, K,
                      stride_xm, stride_xk, stride_wgn, stride_wgk, stride_wun, stride_wuk, stride_om, stride_on,
                      ACTIVATION, DOT_UPCAST, INPUT_PRECISION, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)


def _kernel_args(x2, w_gate, w_up, out, activation: str) -> tuple[tuple, dict]:
    """The kernel's arguments and constexprs for a 2-D x (shared with the compile check)."""
    M, K = x2.shape
    N = w_gate.shape[0]
    args = (x2, w_gate, w_up, out,
            M, N, K, m_bucket(M), num_sms(x2.device),
            x2.stride(0), x2.stride(1), w_gate.stride(0), w_gate.stride(1),
            w_up.stride(0), w_up.stride(1), out.stride(0), out.stride(1))
    constexprs = dict(ACTIVATION=get_activation(activation).triton_fn, DOT_UPCAST=dot_upcast_needed(x2.dtype),
                      INPUT_PRECISION=v.dot_precision(x2.dtype), TMA_OK=tma_ok(x2, w_gate, w_up, out))
    return args, constexprs


def gated_up(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor,
             activation: str = "gelu_tanh") -> torch.Tensor:
    """act(x @ w_gate.T) * (x @ w_up.T) in one Triton kernel (GeGLU with gelu_tanh, SwiGLU with silu).

    x: (..., K); w_gate, w_up: (hidden, K). Returns (..., hidden) in x.dtype. fp32 accumulation;
    float32 inputs use TF32 only when `torch.backends.cuda.matmul.allow_tf32` is set.
    """
    get_activation(activation)
    v.check_forward_only(x, w_gate, w_up)
    K, N = check_activation_input(x, {"w_gate": w_gate, "w_up": w_up})
    x2 = rows_view(x)
    M = x2.shape[0]
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    if M > 0 and N > 0:
        args, constexprs = _kernel_args(x2, w_gate, w_up, out, activation)
        launch(_gated_up_kernel, args, constexprs, M, N, num_sms(x.device))
    return out.reshape(*x.shape[:-1], N)


def gated_mlp(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor,
              activation: str = "gelu_tanh") -> torch.Tensor:
    """(act(x @ w_gate.T) * (x @ w_up.T)) @ w_down.T: the GeGLU/SwiGLU MLP in two kernels
    (eager PyTorch launches five: three GEMMs, the activation, the multiply).

    x: (..., dim); w_gate, w_up: (hidden, dim); w_down: (dim_out, hidden).
    """
    get_activation(activation)
    _, hidden_features = check_activation_input(x, {"w_gate": w_gate, "w_up": w_up})
    v.check_tensor("w_down", w_down, ndim=2)
    v.check_same("x", x, w_down=w_down)
    if w_down.shape[1] != hidden_features:
        raise ValueError(
            f"w_down has shape {tuple(w_down.shape)}; expected (dim_out, {hidden_features}), "
            "its in_features being the hidden size w_gate.shape[0]"
        )
    hidden = gated_up(x, w_gate, w_up, activation)
    return linear_act(hidden, w_down, None, "none")


def _compile_example(dtype, activation):
    """The gate and up projections of a Llama-3-8B MLP at prefill (8192 x 4096 -> 14336), on meta tensors."""
    M, K, N = 8192, 4096, 14336
    x2 = torch.empty(M, K, dtype=dtype, device="meta")
    w_gate, w_up = (torch.empty(N, K, dtype=dtype, device="meta") for _ in range(2))
    return _kernel_args(x2, w_gate, w_up, torch.empty(M, N, dtype=dtype, device="meta"), activation)


KERNELS = (
    KernelSpec("gated_up", "tile", _gated_up_kernel, gemm_candidates(operand_tiles=2), _compile_example,
               _SHARED, _EXCLUDED),
    KernelSpec("gated_up", "persistent", _gated_up_kernel, persistent_candidates(operand_tiles=2), _compile_example,
               _SHARED, _EXCLUDED, dtypes=PERSISTENT_DTYPES, archs=("sm_90",)),
)
