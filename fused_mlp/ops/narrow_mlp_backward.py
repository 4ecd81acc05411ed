"""The narrow MLP's backward (float16, bfloat16): tiny-cuda-nn's design, in two kernels.

How a launch is chosen:
    variant   these two kernels for float16 and bfloat16 (float32 trains through linear_act's backward)
    config    an autotuner per kernel over rows per program (BLOCK_M), keyed on the bucketed M and the widths
    fallback  configs pruned per device (shared memory, the measured exclusions in _config_tables)

    _narrow_dz_kernel     per block of rows, on chip, layer by layer back from dY: dZ_l = act'(Z_l) * dH_l,
                          dH_(l-1) = dZ_l @ W_l, and finally dX; each dZ_l is stored for the weight gradients.
    _narrow_wgrad_kernel  dW_l = sum over rows of dZ_l^T @ H_(l-1) and db_l = sum over rows of dZ_l,
                          H_(l-1) = act(Z_(l-1)) recomputed (x for the first layer). Program (s, l)
                          sums row blocks s, s + S, s + 2S, ... into row s of an fp32 split buffer
                          (S splits, layers, W, W); a second pass (torch's sum over the splits) adds
                          the S rows up. Deterministic: no atomics, a fixed order for a given M.

Why a split buffer and not the row block's partial sums straight from the first kernel: one
(W, W) fp32 partial per row block is 64 KB per layer at W = 128, 5 GB for 2^21 rows and 5
layers; S = at most 256 splits keeps it at 84 MB while giving a GPU S x layers programs.
What the forward saves: x and Z_l of every layer whose activation is not the identity-free last
one (the last layer's Z only with an output activation), in x.dtype, (saved layers, M, W).
"""

import torch
import triton
import triton.language as tl

from .. import _validate as v
from .._triton_compat import INTERPRETER, autotune, dot_upcast_needed
from ..activations import get_activation
from ._config_tables import BF16_FP16, NARROW_DZ_EXCLUDED, NARROW_DZ_TILES, NARROW_WGRAD_EXCLUDED, NARROW_WGRAD_TILES
from ._kernel_spec import NARROW_EXAMPLE_LAYERS, NARROW_EXAMPLE_ROWS, NARROW_EXAMPLE_WIDTHS, KernelSpec
from ._matmul_common import dot_acc, m_bucket, saved_rows, to_storage
from ._tuning import device_pruner

MAX_SPLITS = 256  # the weight-gradient kernel's split-buffer rows (see the module docstring)


def dz_candidates():
    """Rows per program of the on-chip backward (see NARROW_DZ_TILES)."""
    return [triton.Config({"BLOCK_M": bm}, num_warps=warps, num_stages=stages) for bm, warps, stages in NARROW_DZ_TILES]


def wgrad_candidates():
    """Rows per step of the weight-gradient sum (see NARROW_WGRAD_TILES)."""
    return [triton.Config({"BLOCK_M": bm}, num_warps=warps, num_stages=stages)
            for bm, warps, stages in NARROW_WGRAD_TILES]


def _interpreter_or(candidates):
    return [triton.Config({"BLOCK_M": 32}, num_warps=4)] if INTERPRETER else candidates


def dz_shared_bytes(config, dtype_bytes: int, constexprs: dict) -> int:
    """A block of dZ and one layer's weights staged for the dot."""
    width = constexprs["WIDTH"]
    return (config.kwargs["BLOCK_M"] * width + width * width) * dtype_bytes


def wgrad_shared_bytes(config, dtype_bytes: int, constexprs: dict) -> int:
    """num_stages buffers of a dZ block and an H block."""
    return config.num_stages * 2 * config.kwargs["BLOCK_M"] * constexprs["WIDTH"] * dtype_bytes


DZ_EXCLUDED, WGRAD_EXCLUDED = NARROW_DZ_EXCLUDED, NARROW_WGRAD_EXCLUDED  # measured (see _config_tables)


@autotune(configs=_interpreter_or(dz_candidates()), key=["M_BUCKET", "WIDTH", "NUM_LAYERS", "NUM_SAVED", "NEED_DX"],
          prune=device_pruner(dz_shared_bytes, "dy_ptr", DZ_EXCLUDED))
@triton.jit
def _narrow_dz_kernel(
    # pointers: dY (M, OUT_FEATURES), packed weights (layers, WIDTH, WIDTH), saved Z (NUM_SAVED, M, WIDTH);
    # outputs: dZ (layers, M, WIDTH), dX (M, IN_FEATURES)
    dy_ptr, w_ptr, z_ptr, dz_ptr, dx_ptr,
    # sizes (M_BUCKET: the autotune key's M)
    M, IN_FEATURES, OUT_FEATURES, M_BUCKET,
    # strides of dY and dX, in elements (the packed and saved buffers are dense)
    stride_dym, stride_dyn, stride_dxm, stride_dxk,
    # the MLP: depth, packed width, each layer's true width, saved layers, the derivatives
    NUM_LAYERS: tl.constexpr, WIDTH: tl.constexpr, OUT_WIDTHS: tl.constexpr, NUM_SAVED: tl.constexpr,
    ACTIVATION_GRAD: tl.constexpr, OUTPUT_ACTIVATION_GRAD: tl.constexpr, NEED_DX: tl.constexpr,
    # the dot's precision
    DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
    # the config
    BLOCK_M: tl.constexpr,
):
    offs_m = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_w = tl.arange(0, WIDTH)
    row_mask = offs_m[:, None] < M
    dh = tl.load(dy_ptr + offs_m[:, None] * stride_dym + offs_w.to(tl.int64)[None, :] * stride_dyn,
                 mask=row_mask & (offs_w[None, :] < OUT_FEATURES), other=0.0).to(tl.float32)
    for layer in tl.static_range(NUM_LAYERS - 1, -1, -1):  # the last layer first
        if layer < NUM_SAVED:
            z = tl.load(saved_rows(z_ptr, offs_m, M, layer, WIDTH) + offs_w[None, :], mask=row_mask, other=0.0)
            if layer == NUM_LAYERS - 1:
                dz = OUTPUT_ACTIVATION_GRAD(z.to(tl.float32), dh)
            else:
                dz = ACTIVATION_GRAD(z.to(tl.float32), dh)
        else:  # the last layer without an output activation: dZ is dY
            dz = dh
        # Padded lanes to zero (the weights' padding would turn an Inf in a real lane into NaN there),
        # then the storage dtype, as the unfused backward's dZ tensor.
        dz = to_storage(tl.where(offs_w[None, :] < OUT_WIDTHS[layer], dz, 0.0), dz_ptr.dtype.element_ty)
        tl.store(saved_rows(dz_ptr, offs_m, M, layer, WIDTH) + offs_w[None, :], dz, mask=row_mask)
        if layer > 0 or NEED_DX:
            # dH = dZ @ W_l: the packed (out, in) weight as stored is the (K, N) operand
            w = tl.load(w_ptr + layer * WIDTH * WIDTH + offs_w[:, None] * WIDTH + offs_w[None, :])
            dh = to_storage(dot_acc(dz, w, None, DOT_UPCAST, INPUT_PRECISION), dz_ptr.dtype.element_ty).to(tl.float32)
    if NEED_DX:
        tl.store(dx_ptr + offs_m[:, None] * stride_dxm + offs_w.to(tl.int64)[None, :] * stride_dxk,
                 dh.to(dx_ptr.dtype.element_ty), mask=row_mask & (offs_w[None, :] < IN_FEATURES))


# dw_part / db_part are zeroed before every timed run: a config with smaller row blocks fills more splits.
@autotune(configs=_interpreter_or(wgrad_candidates()), key=["M_BUCKET", "WIDTH", "HAS_BIAS"],
          prune=device_pruner(wgrad_shared_bytes, "dz_ptr", WGRAD_EXCLUDED),
          reset_to_zero=["dw_part_ptr", "db_part_ptr"])
@triton.jit
def _narrow_wgrad_kernel(
    # pointers: dZ (layers, M, WIDTH), saved Z (NUM_SAVED, M, WIDTH), x (M, IN_FEATURES);
    # outputs: fp32 split buffers dW (MAX_SPLITS, layers, WIDTH, WIDTH), db (MAX_SPLITS, layers, WIDTH)
    dz_ptr, z_ptr, x_ptr, dw_part_ptr, db_part_ptr,
    # sizes (M_BUCKET: the autotune key's M)
    M, IN_FEATURES, NUM_LAYERS, M_BUCKET,
    # strides of x, in elements
    stride_xm, stride_xk,
    # the layer: packed width, bias gradient or not, the activation that recomputes H from Z
    WIDTH: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
    # the dot's precision
    DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
    # the config
    BLOCK_M: tl.constexpr,
):
    split = tl.program_id(0)
    layer = tl.program_id(1)
    offs_w = tl.arange(0, WIDTH)
    acc = tl.zeros((WIDTH, WIDTH), dtype=tl.float32)
    bias_acc = tl.zeros((WIDTH,), dtype=tl.float32)
    for block in range(split, tl.cdiv(M, BLOCK_M), tl.num_programs(0)):
        offs_m = block * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)  # block * BLOCK_M < M: no overflow
        row_mask = offs_m[:, None] < M
        dz = tl.load(saved_rows(dz_ptr, offs_m, M, layer, WIDTH) + offs_w[None, :], mask=row_mask, other=0.0)
        if layer == 0:
            h = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_w.to(tl.int64)[None, :] * stride_xk,
                        mask=row_mask & (offs_w[None, :] < IN_FEATURES), other=0.0)
        else:
            # H = act(Z) in the storage dtype, as the forward rounded it; padded lanes are act(0) = 0
            z = tl.load(saved_rows(z_ptr, offs_m, M, layer - 1, WIDTH) + offs_w[None, :], mask=row_mask, other=0.0)
            h = to_storage(ACTIVATION(z.to(tl.float32)), dz_ptr.dtype.element_ty)
        acc = dot_acc(tl.trans(dz), h, acc, DOT_UPCAST, INPUT_PRECISION)
        if HAS_BIAS:
            bias_acc += tl.sum(dz.to(tl.float32), axis=0)
    part = (split.to(tl.int64) * NUM_LAYERS + layer) * WIDTH
    tl.store(dw_part_ptr + (part + offs_w[:, None]) * WIDTH + offs_w[None, :], acc)
    if HAS_BIAS:
        tl.store(db_part_ptr + part + offs_w, bias_acc)


def num_saved(num_layers: int, output_activation: str | None) -> int:
    """How many layers' pre-activations the training forward saves: every hidden layer's, and the
    last one's only when an output activation needs it."""
    return num_layers - (0 if (output_activation or "none") != "none" else 1)


def _splits(M: int) -> int:
    smallest_block = min(c.kwargs["BLOCK_M"] for c in _interpreter_or(wgrad_candidates()))
    return max(1, min(triton.cdiv(M, smallest_block), MAX_SPLITS))


def dz_kernel_args(dy, weights, z, dz, dx, widths, activation, output_activation, need_dx: bool):
    """The dZ kernel's arguments and constexprs (shared with the compile check)."""
    layers, width, _ = weights.shape
    M = dy.shape[0]
    dx_ = dx if dx is not None else dy
    args = (dy, weights, z, dz, dx_, M, widths[0], widths[-1], m_bucket(M),
            dy.stride(0), dy.stride(1), dx_.stride(0), dx_.stride(1))
    constexprs = dict(NUM_LAYERS=layers, WIDTH=width, OUT_WIDTHS=tuple(widths[1:]),
                      NUM_SAVED=num_saved(layers, output_activation),
                      ACTIVATION_GRAD=get_activation(activation).triton_grad,
                      OUTPUT_ACTIVATION_GRAD=get_activation(output_activation or "none").triton_grad,
                      NEED_DX=need_dx, DOT_UPCAST=dot_upcast_needed(dy.dtype), INPUT_PRECISION=v.dot_precision(dy.dtype))
    return args, constexprs


def wgrad_kernel_args(dz, z, x2, dw_part, db_part, activation, has_bias: bool):
    """The weight-gradient kernel's arguments and constexprs (shared with the compile check)."""
    layers, M, width = dz.shape
    args = (dz, z, x2, dw_part, db_part, M, x2.shape[1], layers, m_bucket(M), x2.stride(0), x2.stride(1))
    constexprs = dict(WIDTH=width, HAS_BIAS=has_bias, ACTIVATION=get_activation(activation).triton_fn,
                      DOT_UPCAST=dot_upcast_needed(dz.dtype), INPUT_PRECISION=v.dot_precision(dz.dtype))
    return args, constexprs


def narrow_mlp_backward(dy, x2, weights, has_bias: bool, z, widths, activation, output_activation, needs):
    """(dx, d packed weights (layers, W, W), d packed biases (layers, W)) of the fused narrow MLP.
    z: the forward's saved pre-activations (num_saved layers, M, W). needs: which of the three."""
    layers, width, _ = weights.shape
    M = x2.shape[0]
    dz = torch.empty((layers, M, width), dtype=x2.dtype, device=x2.device)
    dx = torch.empty((M, widths[0]), dtype=x2.dtype, device=x2.device) if needs[0] else None
    z_ = z if z.numel() else dz  # no saved layer (one layer, no output activation): never read
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]),)  # noqa: E731
    args, constexprs = dz_kernel_args(dy, weights, z_, dz, dx, widths, activation, output_activation, needs[0])
    _narrow_dz_kernel[grid](*args, **constexprs)
    if not (needs[1] or needs[2]):
        return dx, None, None
    splits = _splits(M)
    dw_part = torch.zeros((splits, layers, width, width), dtype=torch.float32, device=x2.device)
    db_part = torch.zeros((splits, layers, width) if has_bias else (1,), dtype=torch.float32, device=x2.device)
    args, constexprs = wgrad_kernel_args(dz, z_, x2, dw_part, db_part, activation, has_bias)
    wgrid = lambda meta: (min(triton.cdiv(M, meta["BLOCK_M"]), splits), layers)  # noqa: E731
    _narrow_wgrad_kernel[wgrid](*args, **constexprs)
    dw = dw_part.sum(0).to(x2.dtype) if needs[1] else None
    db = db_part.sum(0).to(x2.dtype) if has_bias and needs[2] else None
    return dx, dw, db


def _compile_example(width: int, kernel: str):
    def example(dtype, activation):
        """The backward of a 5-layer MLP of this width over 2^21 rows (as the forward's check), on meta tensors."""
        layers, M = NARROW_EXAMPLE_LAYERS, NARROW_EXAMPLE_ROWS
        meta = dict(dtype=dtype, device="meta")
        x2, dy = torch.empty(M, width, **meta), torch.empty(M, width, **meta)
        z = torch.empty(num_saved(layers, activation), M, width, **meta)
        dz = torch.empty(layers, M, width, **meta)
        if kernel == "dz":
            weights = torch.empty(layers, width, width, **meta)
            return dz_kernel_args(dy, weights, z, dz, x2, (width,) * (layers + 1), activation, activation, True)
        dw_part = torch.empty(MAX_SPLITS, layers, width, width, dtype=torch.float32, device="meta")
        db_part = torch.empty(MAX_SPLITS, layers, width, dtype=torch.float32, device="meta")
        return wgrad_kernel_args(dz, z, x2, dw_part, db_part, activation, True)
    return example


def _kernel_specs():
    specs = []
    for kernel, fn, candidates, shared, excluded in (
            ("dz", _narrow_dz_kernel, dz_candidates(), dz_shared_bytes, DZ_EXCLUDED),
            ("wgrad", _narrow_wgrad_kernel, wgrad_candidates(), wgrad_shared_bytes, WGRAD_EXCLUDED)):
        for width in NARROW_EXAMPLE_WIDTHS:
            specs.append(KernelSpec("narrow_mlp_backward", f"{kernel} width={width}", fn, candidates,
                                    _compile_example(width, kernel), shared, excluded, dtypes=BF16_FP16,
                                    epilogue_covered_by=None if width == NARROW_EXAMPLE_WIDTHS[0]
                                    else f"{kernel} width={NARROW_EXAMPLE_WIDTHS[0]}"))
    return tuple(specs)


KERNELS = _kernel_specs()
