"""What the FP8 GEMM kernels (fp8_linear, fp8_gated) share: the two forms, their autotune
candidates and shared-memory estimate, the in-register e4m3 up-cast, the scale epilogue and the
launcher's checks.

W8A8: e4m3 x and W, an e4m3 x e4m3 tensor-core dot (wgmma on sm_90) accumulating in fp32, the
scales applied to the accumulator. Needs FP8 tensor cores: Triton refuses e4m3 below sm_89. The
operands are in the device's own encoding (e4m3fn, or e4m3fnuz on gfx942, whose FP8 MFMA takes
only that); both in one, and the kernel is the same source (Triton types the dot by its operands).
W8A16: bf16/fp16 x, e4m3fn W read as bytes (half of bf16's traffic: decode's whole cost) and
up-cast in registers to x's dtype with integer ops, so it runs wherever bf16/fp16 does (sm_80).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .. import _validate as v
from .._arch import device_arch, w8a8_missing
from .._triton_compat import INTERPRETER
from ..quantize import E4M3_DTYPES, FP8_DTYPE, check_scale, format_of
from ._matmul_common import dot_acc, rows_view
from ._tuning import Exclusion, _gemm_config, _persistent, config_key, is_persistent

# (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps). An e4m3 wgmma takes K in steps of 32 and a
# 128-byte row is one swizzle line: BLOCK_K 128 for 1-byte operands (64 where shared memory is
# short). Shared memory per stage is half of bf16's for the same tile.
W8A8_TILES = [
    (128, 128, 128, 4, 8),  # 129 KB; 128x256 (w8) and 128x128 with one warpgroup spilled (52-428 B, erf-GELU)
    (128, 128, 128, 3, 8),
    (64, 256, 128, 3, 8),  # the wide tile with half the rows: 64 accumulator registers per thread
    # Half-size tiles on two warpgroups: what the gated kernel's four accumulators (gate and up,
    # each a promoted one and an imprecise wgmma one) fit into.
    (128, 64, 128, 4, 8),
    (64, 128, 128, 4, 8),
    (64, 128, 128, 4, 4),
    (64, 64, 128, 4, 4),
    (16, 64, 256, 4, 4),  # decode (M <= 16): 224 CTAs over N = 14336 stream W on 132 SMs (mma, not wgmma)
    (16, 32, 256, 5, 4),  # decode, N = 4096 (a down projection): 128 CTAs
]
# W8A16: x (2 bytes) from shared memory, W bytes up-cast in registers before the dot. Mostly
# decode: narrow N tiles give every SM a tile, deep K stages keep W's bytes in flight.
W8A16_TILES = [
    (16, 64, 256, 4, 4),
    (16, 32, 256, 5, 4),
    (16, 128, 128, 4, 4),
    (32, 64, 128, 4, 4),
    (64, 128, 64, 4, 4),  # prefill: W8A16 only saves W's bytes, which matter little there
    (128, 128, 64, 3, 8),
    (64, 64, 64, 4, 4),  # prefill for the gated kernel, whose two up-cast weight tiles spill above
]

# The persistent TMA variant of linear_act_fp8 (W8A8 on sm_90; see _gemm_launch), as bf16's:
# (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps, EPILOGUE_SUBTILE). Every one compiles clean
# (python -m fused_mlp.aot --candidates, Triton 3.6.0 and 3.9.0, erf-GELU). Not listed: tutorial
# 09's fp8 tile 128x256x128 spills (144-152 B at 255 registers: the promoted and the imprecise
# accumulator), and 128x128x128 on one warpgroup sits at 253-254 registers.
W8A8_PERSISTENT_TILES = [
    (128, 128, 128, 4, 8, 2),  # the tile variant's first tile, with the half-width epilogue (16 KB less)
    (128, 128, 128, 4, 8, 1),
    (64, 256, 128, 3, 8, 2),
    (64, 128, 128, 4, 4, 1),
    (16, 64, 256, 6, 4, 1),  # decode (M <= 16), as the tile variant's (mma: wgmma needs 64 rows)
    (16, 32, 256, 6, 4, 1),  # decode, N = 4096 (a down projection)
]
# Offered to the autotuner: the first only, until a GPU says which pay. Each offered config adds
# ~2.5 s of cold compiles and tuning to the default asv grid (python -m benchmarks.suite_cost),
# which has none to spare; tools/measure_fp8_variants.py times the held-back ones too.
W8A8_PERSISTENT_OFFERED = 1
HELD_BACK = ("held back from the autotuner (the default grid's compile budget) until a GPU shows it pays: "
             "tools/measure_fp8_variants.py")

FORMS = ("w8a8", "w8a16")
# Under the interpreter: one small config, K steps of 32 so the tests' K (37-131) loop several times.
INTERPRETER_CONFIG = _gemm_config(32, 32, 32, 1, 4)
OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
ACTIVATION_DTYPES = (torch.bfloat16, torch.float16)  # W8A16's x


def candidates(form: str, operand_tiles: int = 1) -> list[triton.Config]:
    """Every tile-variant config of `form`'s kernel its autotuner may be offered (two weight
    tiles per K step, gated: BLOCK_N <= 128, as for the bf16 kernels)."""
    tiles = W8A8_TILES if form == "w8a8" else W8A16_TILES
    return [_gemm_config(*t) for t in tiles if operand_tiles == 1 or t[1] <= 128]


def persistent_candidates() -> list[triton.Config]:
    """Every persistent-variant config of linear_act_fp8's W8A8 kernel (the held-back ones too:
    the compile check and the variant measurement see them; the pruner does not offer them)."""
    return [_gemm_config(*t[:5], **_persistent(t[5])) for t in W8A8_PERSISTENT_TILES]


def held_back_persistent() -> tuple[Exclusion, ...]:
    """The persistent candidates past W8A8_PERSISTENT_OFFERED, as exclusions (not offered, why)."""
    return tuple(Exclusion(("sm_90",), ("fp8",), config_key(c), HELD_BACK, policy=True)
                 for c in persistent_candidates()[W8A8_PERSISTENT_OFFERED:])


def configs(form: str, operand_tiles: int = 1, persistent: bool = False) -> list[triton.Config]:
    """What the autotuner gets: the one interpreter config on the CPU (tests force the persistent
    one, see _gemm_launch.force_config), every candidate on a GPU, the persistent ones too where
    the kernel has that variant (pruned per launch: TMA_OK, sm_90)."""
    if INTERPRETER:
        return [INTERPRETER_CONFIG]
    return candidates(form, operand_tiles) + (persistent_candidates() if persistent else [])


# The persistent variant's TMA store stages one epilogue subtile of the output; out_dtype is not
# among the launch's constexprs, so the estimate takes the widest (fp32).
_WIDEST_OUT_BYTES = 4


def shared_bytes(operand_tiles: int):
    """num_stages buffers of the x tile (dtype_bytes: 1 for W8A8, 2 for W8A16) and the 1-byte
    weight tiles, plus for the persistent variant the TMA store's subtile buffer."""
    def estimate(config: triton.Config, dtype_bytes: int, constexprs: dict) -> int:
        bm, bn, bk = (config.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
        operands = config.num_stages * (bm * bk * dtype_bytes + operand_tiles * bk * bn)
        if not is_persistent(config):
            return operands
        return operands + bm * (bn // config.kwargs.get("EPILOGUE_SUBTILE", 1)) * _WIDEST_OUT_BYTES
    return estimate


@triton.jit
def e4m3_bits_to(bits, DTYPE: tl.constexpr):
    """e4m3fn bytes (uint8) as DTYPE values, exactly (every e4m3 value is a bf16 and an fp16).
    The sign, exponent and mantissa bits placed into fp16's are the value times 2^-8, for normal
    and subnormal e4m3 alike; one multiply rescales. e4m3fn has no Inf; its NaN (S.1111.111) is
    restored explicitly. Integer ops only: runs where Triton has no e4m3 type (sm_80)."""
    b = bits.to(tl.uint16)
    magnitude = b & 0x7F
    half = ((b & 0x80) << 8 | magnitude << 7).to(tl.float16, bitcast=True)
    value = half.to(tl.float32) * 256.0
    value = tl.where(magnitude == 0x7F, float("nan"), value)
    return value.to(DTYPE)


@triton.jit
def weight_tile(w, x, X_FP8: tl.constexpr):
    """W's tile as the dot takes it: the e4m3 tile as loaded (W8A8), or its bytes up-cast to x's
    dtype (W8A16)."""
    if not X_FP8:
        w = e4m3_bits_to(w, x.dtype)
    return w


@triton.jit
def w8a8_dot(x, w, acc, BLOCK_K: tl.constexpr):
    """acc + x @ w on e4m3 tiles. Hopper's e4m3 wgmma accumulates with fewer than fp32's bits:
    promoted into the fp32 accumulator after every BLOCK_K products (torch._scaled_mm's
    use_fast_accum=False)."""
    return tl.dot(x, w, acc, max_num_imprecise_acc=BLOCK_K)


@triton.jit
def form_dot(x, w, acc, X_FP8: tl.constexpr, DOT_UPCAST: tl.constexpr, BLOCK_K: tl.constexpr):
    """acc + x @ w for either form, w from weight_tile: W8A8's promoted e4m3 dot, or W8A16's
    bf16/fp16 one through dot_acc (input precision None, tl.dot's default: it only matters for
    fp32 operands, which the interpreter's upcast makes and computes exactly)."""
    if X_FP8:
        acc = w8a8_dot(x, w, acc, BLOCK_K)
    else:
        acc = dot_acc(x, w, acc, DOT_UPCAST, None)
    return acc


@triton.jit
def scale_columns(acc, s_ptr, offs_n, N, PER_ROW: tl.constexpr):
    """acc * the weight scales: one per output channel (column), or one for the tensor."""
    if PER_ROW:
        s = tl.load(s_ptr + offs_n, mask=offs_n < N, other=1.0)
        return acc * s[None, :]
    return acc * tl.load(s_ptr)


@triton.jit
def scale_rows(acc, s_ptr, offs_m, M, PER_ROW: tl.constexpr):
    """acc * x's scales: one per token (row), or one for the tensor."""
    if PER_ROW:
        s = tl.load(s_ptr + offs_m, mask=offs_m < M, other=1.0)
        return acc * s[:, None]
    return acc * tl.load(s_ptr)


def form_of(x: torch.Tensor) -> str:
    """"w8a8" for e4m3 x, "w8a16" for bf16/fp16 x; a TypeError naming the choices otherwise."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype in E4M3_DTYPES:
        return "w8a8"
    if x.dtype in ACTIVATION_DTYPES:
        return "w8a16"
    raise TypeError(f"x has dtype {x.dtype}; expected float8_e4m3fn or float8_e4m3fnuz (W8A8, with x_scale) or "
                    "bfloat16/float16 (W8A16, weight-only); quantize float32 x with fused_mlp.quantize_fp8")


def check_fp8_weight(name: str, w, x: torch.Tensor, K: int, k_is: str = "x.shape[-1]") -> int:
    """An (N, K) e4m3 weight on x's device (K: `k_is`): in x's encoding for W8A8, in
    float8_e4m3fn for W8A16 (its up-cast reads e4m3fn bytes); returns N."""
    if not isinstance(w, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(w).__name__}")
    expected = x.dtype if x.dtype in E4M3_DTYPES else FP8_DTYPE
    if w.dtype != expected:
        if w.dtype == torch.float8_e5m2:
            why = "e5m2 is not supported"
        elif w.dtype not in E4M3_DTYPES:
            why = "the FP8 kernels take e4m3 weights"
        elif x.dtype in E4M3_DTYPES:
            why = "W8A8 takes x and the weights in one e4m3 encoding"
        else:
            why = "W8A16 up-casts e4m3fn bytes"
        raise TypeError(f"{name} has dtype {w.dtype}; expected {expected} ({why}): quantize it with "
                        f"fused_mlp.quantize_fp8({name}, 'row', fp8_dtype={expected})")
    if w.dim() != 2:
        raise ValueError(f"{name} must be 2-D (out_features, in_features), got shape {tuple(w.shape)}")
    if w.shape[1] != K:
        raise ValueError(f"{name} has shape {tuple(w.shape)}; expected (out_features, {K}), "
                         f"its in_features matching {k_is} = {K}")
    if w.device != x.device:
        raise ValueError(f"{name} is on {w.device} but x is on {x.device}; all operands must be on one device")
    return w.shape[0]


def check_x(x: torch.Tensor, x_scale, check_scales: bool):
    """(form, x as 2-D rows, x's scales or None) after checking x and x_scale against the form."""
    form = form_of(x)
    if x.dim() < 1:
        raise ValueError(f"x must have at least 1 dim(s), got shape {tuple(x.shape)}")
    v.check_runnable_device("x", x)
    x2 = rows_view(x)
    if form == "w8a16":
        if x_scale is not None:
            raise ValueError(f"x_scale is given but x is {x.dtype} (W8A16, weight-only: x is not quantized); "
                             "pass x in e4m3 (quantize_fp8) for W8A8")
        return form, x2, None
    if x_scale is None:
        raise ValueError(f"x is {x.dtype} (W8A8) but x_scale is None: pass the scales quantize_fp8 returned")
    if isinstance(x_scale, torch.Tensor) and x_scale.device != x.device:
        raise ValueError(f"x_scale is on {x_scale.device} but x is on {x.device}")
    scales = check_scale("x_scale", x_scale, x2.shape[0], "x (tokens)", check_values=check_scales)
    check_fp8_tensor_cores(x.device, x.dtype)
    return form, x2, scales


def check_fp8_tensor_cores(device: torch.device, fp8_dtype: torch.dtype = FP8_DTYPE) -> None:
    """W8A8 runs on the FP8 tensor cores in their own e4m3 encoding: refuse a GPU without them,
    or operands in the other encoding, by the architecture the GPU follows (not ROCm's reported
    capability; the interpreter computes both encodings)."""
    if device.type != "cuda":
        return
    why = w8a8_missing(device_arch(device), format_of(fp8_dtype))
    if why is not None:
        raise ValueError(f"W8A8 cannot run on this GPU: {why}. Use W8A16 (bf16/fp16 x with e4m3fn weights) instead")


def check_weight_scale(name: str, scale, w: torch.Tensor, check_scales: bool) -> torch.Tensor:
    if isinstance(scale, torch.Tensor) and scale.device != w.device:
        raise ValueError(f"{name} is on {scale.device} but the weight is on {w.device}")
    return check_scale(name, scale, w.shape[0], "the weight (output channels)", check_values=check_scales)


def out_dtype_for(form: str, x: torch.Tensor, out_dtype) -> torch.dtype:
    """The output dtype: bf16 for W8A8 (torch._scaled_mm's usual), x's for W8A16, unless asked."""
    if out_dtype is None:
        return torch.bfloat16 if form == "w8a8" else x.dtype
    if out_dtype not in OUT_DTYPES:
        raise TypeError(f"out_dtype={out_dtype}; expected torch.bfloat16, torch.float16 or torch.float32")
    return out_dtype


def weight_operand(form: str, w: torch.Tensor) -> torch.Tensor:
    """What the kernel reads for W: e4m3 for W8A8, the e4m3fn bytes as uint8 for W8A16 (up-cast
    by e4m3_bits_to, so no e4m3 type reaches a GPU without one)."""
    return w if form == "w8a8" else w.view(torch.uint8)
