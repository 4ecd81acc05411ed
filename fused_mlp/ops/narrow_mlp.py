"""narrow_mlp: a whole multi-layer MLP with every width <= 128 in one kernel (tiny-cuda-nn style).

How a launch is chosen:
    variant   one kernel (float16, bfloat16); float32 runs one linear_act kernel per layer instead
    config    an autotuner over rows per program (BLOCK_M), keyed on the bucketed M, the widths and the depth
    fallback  configs pruned per device (shared memory, the measured exclusions in _config_tables)

Each program loads its block of rows once, runs every layer with the activations held on-chip,
and writes only the final output. The layer weights are packed into one zero-padded
(layers, WIDTH, WIDTH) buffer so a single kernel handles any mix of widths: the zero padding
makes the padded lanes contribute nothing, whatever act(0) is. The one kernel is for float16 and
bfloat16; float32 runs one linear_act kernel per layer (see _layer_by_layer).

Training (float16, bfloat16): the forward also stores each needed layer's pre-activation
(NUM_SAVED layers); the backward is narrow_mlp_backward's two kernels (dZ on chip per row block,
then the weight gradients through a deterministic split buffer). float32 trains through
linear_act's backward, layer by layer.
"""

from collections.abc import Sequence
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from .. import _validate as v
from .._triton_compat import INTERPRETER, autotune, dot_upcast_needed
from ..activations import get_activation
from ._config_tables import NARROW_EXCLUDED, NARROW_TILES
from ._kernel_spec import NARROW_EXAMPLE_LAYERS, NARROW_EXAMPLE_ROWS, NARROW_EXAMPLE_WIDTHS, KernelSpec
from ._matmul_common import dot_acc, m_bucket, rows_view, saved_rows, to_storage
from ._tuning import device_pruner
from . import narrow_mlp_backward
from ._autograd import refuse_double_backward, trains
from .linear_act import linear_act

MAX_WIDTH = 128
_MIN_DOT_WIDTH = 16  # tl.dot needs every dimension >= 16


def _narrow_candidates():
    """BLOCK_M candidates (see NARROW_TILES): rows per program vs registers."""
    return [triton.Config({"BLOCK_M": bm}, num_warps=warps, num_stages=stages) for bm, warps, stages in NARROW_TILES]


def _narrow_configs():
    return [triton.Config({"BLOCK_M": 32})] if INTERPRETER else _narrow_candidates()


def _shared_bytes(config, dtype_bytes: int, constexprs: dict) -> int:
    """A block of rows and one layer's weights staged for the dot."""
    width = constexprs["WIDTH"]
    return (config.kwargs["BLOCK_M"] * width + width * width) * dtype_bytes


_EXCLUDED = NARROW_EXCLUDED  # measured (see _config_tables)


# WIDTH and NUM_LAYERS are in the key: MLPs of equal in/out features but other hidden widths or
# depths must not share a tuned choice.
@autotune(configs=_narrow_configs(),
          key=["M_BUCKET", "IN_FEATURES", "OUT_FEATURES", "WIDTH", "NUM_LAYERS", "INPUT_PRECISION"],
          prune=device_pruner(_shared_bytes, "x_ptr", _EXCLUDED))
@triton.jit
def _narrow_mlp_kernel(
    # pointers: x (M, IN_FEATURES), packed weights (layers, WIDTH, WIDTH), biases (layers, WIDTH),
    # out (M, OUT_FEATURES); z (NUM_SAVED, M, WIDTH): the pre-activations a training forward saves
    x_ptr, w_ptr, b_ptr, out_ptr, z_ptr,
    # sizes (M_BUCKET: the autotune key's M)
    M, IN_FEATURES, OUT_FEATURES, M_BUCKET,
    # strides of x and out, in elements (the packed buffers are dense)
    stride_xm, stride_xk, stride_om, stride_on,
    # the MLP: depth, packed width, each layer's true width, the epilogues, how many Z to save
    NUM_LAYERS: tl.constexpr, WIDTH: tl.constexpr, OUT_WIDTHS: tl.constexpr, HAS_BIAS: tl.constexpr,
    ACTIVATION: tl.constexpr, OUTPUT_ACTIVATION: tl.constexpr, NUM_SAVED: tl.constexpr,
    # the dot's precision
    DOT_UPCAST: tl.constexpr, INPUT_PRECISION: tl.constexpr,
    # the config
    BLOCK_M: tl.constexpr,
):
    offs_m = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_w = tl.arange(0, WIDTH)
    row_mask = offs_m[:, None] < M
    # int64: a column-major x's stride times a feature index can pass 2^31 elements
    h = tl.load(
        x_ptr + offs_m[:, None] * stride_xm + offs_w.to(tl.int64)[None, :] * stride_xk,
        mask=row_mask & (offs_w[None, :] < IN_FEATURES),
        other=0.0,
    )
    for layer in tl.static_range(NUM_LAYERS):
        # Packed weights are (layer, out, in); load the transposed tile (in, out) for h @ W^T.
        w = tl.load(w_ptr + layer * WIDTH * WIDTH + offs_w[None, :] * WIDTH + offs_w[:, None])
        acc = dot_acc(h, w, None, DOT_UPCAST, INPUT_PRECISION)
        if HAS_BIAS:
            acc += tl.load(b_ptr + layer * WIDTH + offs_w).to(tl.float32)[None, :]
        if layer < NUM_SAVED:  # training: the pre-activation, for the backward
            tl.store(saved_rows(z_ptr, offs_m, M, layer, WIDTH) + offs_w[None, :], to_storage(acc, z_ptr.dtype.element_ty),
                     mask=row_mask)
        if layer < NUM_LAYERS - 1:
            acc = ACTIVATION(acc)
        else:
            acc = OUTPUT_ACTIVATION(acc)
        # Round to the storage dtype between layers, as a framework MLP in that dtype does.
        h = to_storage(acc, out_ptr.dtype.element_ty)
        if layer < NUM_LAYERS - 1:
            if OUT_WIDTHS[layer] < WIDTH:
                # Padded lanes back to zero: an Inf in a real lane times a padding zero made them
                # NaN, which the next layer's padding would carry into real lanes. (No select is
                # compiled for a layer as wide as the packing; the last layer's store is masked.)
                h = tl.where(offs_w[None, :] < OUT_WIDTHS[layer], h, 0.0)
    tl.store(
        out_ptr + offs_m[:, None] * stride_om + offs_w[None, :] * stride_on,
        h,
        mask=row_mask & (offs_w[None, :] < OUT_FEATURES),
    )


def _check_layers(weights, biases):
    if isinstance(weights, torch.Tensor) or not isinstance(weights, Sequence) or len(weights) == 0:
        raise TypeError("weights must be a non-empty list or tuple of 2-D (out, in) tensors")
    for i, w in enumerate(weights):
        v.check_tensor(f"weights[{i}]", w, ndim=2)
        if max(w.shape) > MAX_WIDTH:
            raise ValueError(
                f"weights[{i}] has shape {tuple(w.shape)}; narrow_mlp supports layer widths "
                f"<= {MAX_WIDTH} (use linear_act or gated_mlp for wider layers)"
            )
        if i > 0 and w.shape[1] != weights[i - 1].shape[0]:
            raise ValueError(
                f"weights[{i}] has shape {tuple(w.shape)}; its in_features must equal "
                f"weights[{i - 1}].shape[0] = {weights[i - 1].shape[0]}"
            )
    if biases is None:
        return
    if isinstance(biases, torch.Tensor) or not isinstance(biases, Sequence) or len(biases) != len(weights):
        raise TypeError(
            f"biases must be None or a list with one entry (a 1-D tensor or None) per layer "
            f"({len(weights)} layers)"
        )
    for i, (b, w) in enumerate(zip(biases, weights)):
        if b is None:
            continue
        v.check_tensor(f"biases[{i}]", b, ndim=1)
        v.check_shape(f"biases[{i}]", b.shape, (w.shape[0],), f"out_features of weights[{i}]")


class PackedMLP(NamedTuple):
    """An MLP's layers as the one kernel reads them (made by `pack_layers`)."""

    weights: torch.Tensor  # (layers, W, W), each layer's (out, in) weight zero-padded to W x W
    biases: torch.Tensor | None  # (layers, W), zero-padded, or None
    widths: tuple[int, ...]  # every layer's width: (in, hidden..., out)


def pack_layers(weights: Sequence[torch.Tensor], biases: Sequence[torch.Tensor | None] | None = None) -> PackedMLP:
    """Validate the layers and pack them into the kernel's zero-padded buffers.

    `narrow_mlp` and FusedNarrowMLP pack on every call (a few small copies): no cache can see
    every way weights change (writes through .data or numpy bump no version counter). Where the
    weights are known to stay fixed, pack once and call `narrow_mlp_packed` (the benchmark
    harness does).
    """
    _check_layers(weights, biases)
    first = weights[0]
    v.check_same("weights[0]", first, **{f"weights[{i}]": w for i, w in enumerate(weights)})
    if biases is not None:
        v.check_same("weights[0]", first, **{f"biases[{i}]": b for i, b in enumerate(biases) if b is not None})
    width = max(_MIN_DOT_WIDTH, triton.next_power_of_2(max(max(w.shape) for w in weights)))
    packed_w = torch.zeros((len(weights), width, width), dtype=first.dtype, device=first.device)
    for i, w in enumerate(weights):
        packed_w[i, : w.shape[0], : w.shape[1]] = w
    packed_b = None
    if biases is not None and any(b is not None for b in biases):
        packed_b = torch.zeros((len(weights), width), dtype=first.dtype, device=first.device)
        for i, b in enumerate(biases):
            if b is not None:
                packed_b[i, : b.shape[0]] = b
    return PackedMLP(packed_w, packed_b, (first.shape[1], *(w.shape[0] for w in weights)))


def _layer_by_layer(x2, packed: PackedMLP, activation: str, output_activation: str | None):
    """The MLP as one linear_act kernel per layer, for float32. The one-kernel MLP keeps a whole
    layer's operands in registers, which 4-byte operands overflow: with an IEEE dot it spills at
    every config on sm_90 and sm_80, with a TF32 dot at every config for width 128 (measured by
    python -m fused_mlp.aot). Like tiny-cuda-nn's fully fused MLP, the one kernel is for 16-bit
    dtypes. Each layer uses its true widths (views into the packed buffers), as torch does."""
    h = x2
    layers = len(packed.widths) - 1
    for i, (n_in, n_out) in enumerate(zip(packed.widths[:-1], packed.widths[1:])):
        b = None if packed.biases is None else packed.biases[i, :n_out]
        h = linear_act(h, packed.weights[i, :n_out, :n_in], b,
                       activation if i < layers - 1 else (output_activation or "none"))
    return h


def _kernel_args(x2, packed: PackedMLP, out, activation: str, output_activation: str | None,
                 z=None) -> tuple[tuple, dict]:
    """The kernel's arguments and constexprs (shared with the compile check, fused_mlp.aot). `z`:
    the (saved layers, M, W) buffer a training forward stores pre-activations in (None: inference)."""
    num_layers, width, _ = packed.weights.shape
    M, in_features = x2.shape
    saved = z.shape[0] if z is not None else 0
    args = (x2, packed.weights, packed.biases if packed.biases is not None else packed.weights, out,
            z if saved else out,
            M, in_features, out.shape[1], m_bucket(M),
            x2.stride(0), x2.stride(1), out.stride(0), out.stride(1))
    constexprs = dict(NUM_LAYERS=num_layers, WIDTH=width, OUT_WIDTHS=tuple(packed.widths[1:]),
                      HAS_BIAS=packed.biases is not None,
                      ACTIVATION=get_activation(activation).triton_fn,
                      OUTPUT_ACTIVATION=get_activation(output_activation or "none", "output_activation").triton_fn,
                      NUM_SAVED=saved,
                      DOT_UPCAST=dot_upcast_needed(x2.dtype), INPUT_PRECISION=v.dot_precision(x2.dtype))
    return args, constexprs


def _forward(x2, packed: PackedMLP, activation: str, output_activation: str | None, store_pre: bool = False):
    """The one-kernel MLP on a 2-D x: (out, the saved pre-activations or None)."""
    M, width = x2.shape[0], packed.weights.shape[-1]
    out = torch.empty((M, packed.widths[-1]), dtype=x2.dtype, device=x2.device)
    z = None
    if store_pre:
        saved = narrow_mlp_backward.num_saved(len(packed.widths) - 1, output_activation)
        z = torch.empty((saved, M, width), dtype=x2.dtype, device=x2.device)
    if M > 0:
        args, constexprs = _kernel_args(x2, packed, out, activation, output_activation, z)
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]),)  # noqa: E731
        _narrow_mlp_kernel[grid](*args, **constexprs)
    return out, z


class _NarrowMLP(torch.autograd.Function):
    """The one-kernel MLP for training (float16, bfloat16). Saves x and every needed layer's
    pre-activation (see narrow_mlp_backward); gradients come back for the packed buffers, and
    from them through pack_layers' copies to each layer's own weight and bias."""

    @staticmethod
    def forward(ctx, x2, weights, biases, widths, activation, output_activation):
        packed = PackedMLP(weights, biases, widths)
        out, z = _forward(x2, packed, activation, output_activation, store_pre=True)
        ctx.meta = (widths, activation, output_activation, biases is not None)
        ctx.save_for_backward(x2, weights, z)
        return out

    @staticmethod
    def backward(ctx, dy):
        refuse_double_backward("narrow_mlp")
        x2, weights, z = ctx.saved_tensors
        widths, activation, output_activation, has_bias = ctx.meta
        if x2.shape[0] == 0:
            dw = torch.zeros_like(weights) if ctx.needs_input_grad[1] else None
            db = torch.zeros(weights.shape[:2], dtype=weights.dtype, device=weights.device) if has_bias else None
            return x2.new_empty(0, widths[0]), dw, db, None, None, None
        dx, dw, db = narrow_mlp_backward.narrow_mlp_backward(
            dy, x2, weights, has_bias, z, widths, activation, output_activation, ctx.needs_input_grad[:3])
        return dx, dw, db, None, None, None


def _check_packed(packed) -> None:
    """A PackedMLP as pack_layers makes it: the kernel reads the buffers as dense arrays."""
    if not isinstance(packed, PackedMLP):
        raise TypeError(f"packed must be the PackedMLP that pack_layers returns, got {type(packed).__name__}")
    weights, biases, widths = packed
    layers, width = len(widths) - 1, weights.shape[-1] if weights.dim() == 3 else None
    if weights.dim() != 3 or tuple(weights.shape) != (layers, width, width):
        raise ValueError(f"packed.weights has shape {tuple(weights.shape)}; expected ({layers}, W, W) from pack_layers")
    if not 0 < max(widths) <= width:
        raise ValueError(f"packed.widths={widths} do not fit the packed width {width}")
    if biases is not None:
        v.check_same("packed.weights", weights, **{"packed.biases": biases})
        v.check_shape("packed.biases", biases.shape, (layers, width), "(layers, W) from pack_layers")
    for name, t in (("packed.weights", weights), ("packed.biases", biases)):
        if t is not None and not t.is_contiguous():
            raise ValueError(f"{name} is not contiguous (strides {t.stride()}); the kernel reads it as "
                             "pack_layers made it: pack again, or call .contiguous() on it")


def narrow_mlp_packed(x: torch.Tensor, packed: PackedMLP, activation: str = "relu",
                      output_activation: str | None = None) -> torch.Tensor:
    """Run the fused narrow MLP on layers already packed by `pack_layers`."""
    get_activation(activation)
    get_activation(output_activation or "none", "output_activation")
    v.check_tensor("x", x, min_ndim=1)
    _check_packed(packed)
    v.check_same("x", x, **{"packed.weights": packed.weights})
    v.check_runnable_device("x", x)
    in_features, out_features = packed.widths[0], packed.widths[-1]
    if x.shape[-1] != in_features:
        raise ValueError(
            f"x has shape {tuple(x.shape)}; its last dim must be the MLP's in_features = {in_features}"
        )
    x2 = rows_view(x)
    if x.dtype == torch.float32:  # linear_act per layer: its autograd carries the gradients
        out = _layer_by_layer(x2, packed, activation, output_activation)
    elif trains(x, packed.weights, packed.biases):
        out = _NarrowMLP.apply(x2, packed.weights, packed.biases, packed.widths, activation, output_activation)
    else:
        out, _ = _forward(x2, packed, activation, output_activation)
    return out if x.dim() == 2 else out.reshape(*x.shape[:-1], out_features)


def narrow_mlp(x: torch.Tensor, weights: Sequence[torch.Tensor],
               biases: Sequence[torch.Tensor | None] | None = None, activation: str = "relu",
               output_activation: str | None = None) -> torch.Tensor:
    """A whole MLP in one Triton kernel: h = act(h @ W_i.T + b_i) for every hidden layer, then
    output_activation (default none) after the last. Every width must be <= 128.

    x: (..., in_features); weights[i]: (out_i, in_i) as in nn.Linear, chained; biases: None or one
    (out_i,) tensor (or None) per layer. Activations stay on-chip in fp32 per layer and are rounded
    to x.dtype between layers, as a framework MLP in that dtype does. float16 and bfloat16 run as
    one kernel; float32 as one kernel per layer (the one-kernel form spills), using TF32 only when
    `torch.backends.cuda.matmul.allow_tf32` is set.
    """
    get_activation(activation)
    get_activation(output_activation or "none", "output_activation")
    v.check_tensor("x", x, min_ndim=1)
    _check_layers(weights, biases)
    v.check_same("x", x, **{"weights[0]": weights[0]})  # before packing: fail without copying anything
    return narrow_mlp_packed(x, pack_layers(weights, biases), activation, output_activation)


def _compile_example(width: int):
    def example(dtype, activation):
        """A 5-layer MLP of this width over 2^21 rows (a NeRF-style batch), on meta tensors."""
        layers, M = NARROW_EXAMPLE_LAYERS, NARROW_EXAMPLE_ROWS
        x2, out = (torch.empty(M, width, dtype=dtype, device="meta") for _ in range(2))
        packed = PackedMLP(torch.empty(layers, width, width, dtype=dtype, device="meta"),
                           torch.empty(layers, width, dtype=dtype, device="meta"), (width,) * (layers + 1))
        return _kernel_args(x2, packed, out, activation, activation)
    return example


_FIRST_WIDTH = NARROW_EXAMPLE_WIDTHS[0]  # its every-activation compile covers the other width's epilogue
KERNELS = tuple(KernelSpec("narrow_mlp", f"width={w}", _narrow_mlp_kernel, _narrow_candidates(),
                           _compile_example(w), _shared_bytes, _EXCLUDED, dtypes=("bf16", "fp16"),
                           epilogue_covered_by=None if w == _FIRST_WIDTH else f"width={_FIRST_WIDTH}")
                for w in NARROW_EXAMPLE_WIDTHS)
