"""Autotune candidates, which of them are offered on which GPU, and the hook that prunes the rest.

A candidate is offered for an architecture and dtype unless its estimated shared memory exceeds
what a block may use there, or the compile check measured it breaking a rule there (the kernel's
exclusions: spills, no tensor cores). `python -m fused_mlp.aot` compiles every offered config for
each architecture (fused_mlp._arch) and fails when one of them breaks a rule, so the exclusions and the estimates stay
honest; at run time the autotuner only benchmarks what is offered on the device it runs on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import triton

from .._arch import Arch, device_arch, w8a8_missing
from .._triton_compat import INTERPRETER

# The tile variant (tutorial 03: one program per output tile, pointer loads).
# (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps)
GEMM_TILES = [
    (128, 256, 64, 3, 8),  # the Hopper tile of tutorial 03: 2-byte dtypes
    (128, 128, 64, 3, 8),
    (64, 128, 64, 4, 4),
    (128, 128, 32, 3, 8),  # BLOCK_K 32: 4-byte dtypes fit shared memory and registers
    (64, 64, 32, 3, 4),
    (32, 64, 32, 3, 4),  # the two-accumulator kernel in IEEE fp32 fits registers only this small
    (16, 64, 256, 3, 4),  # decode (M <= 16): 224 CTAs over N = 14336 stream the weights on 132 SMs
    (16, 64, 64, 3, 4),  # decode, 4-byte dtypes
]

# The persistent variant (tutorial 09: one program per SM looping over tiles, TMA loads and
# stores through tensor descriptors, sm_90 and newer).
# (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps, EPILOGUE_SUBTILE)
PERSISTENT_TILES = [
    (128, 256, 64, 3, 8, 2),  # tutorial 09's Hopper tile; the half-width epilogue frees 32 KB of shared memory
    (128, 128, 64, 4, 8, 1),
    (128, 128, 64, 4, 4, 2),  # one warpgroup: the subtiled epilogue halves its live registers
    (64, 128, 64, 4, 4, 1),
    (128, 128, 32, 3, 8, 2),  # BLOCK_K 32: 4-byte dtypes
    (64, 64, 32, 4, 4, 1),
    # Decode (M <= 16): reading W is the whole cost. Narrow N tiles give N / BLOCK_N tiles for the
    # 132 SMs (14336 / 64 = 224, 4096 / 32 = 128); deep K pipelines keep 80-160 KB of W in flight per
    # SM (the compiler keeps 5 of the 6 stages here, measured).
    (16, 64, 128, 6, 4, 1),  # 6 stages of both weight tiles still fit gated_up's shared memory
    (16, 32, 256, 6, 4, 1),  # N = 4096 (a down projection): 128 tiles
    (16, 64, 64, 4, 4, 1),  # decode, 4-byte dtypes
]

# The persistent variant is for tensor-core dtypes: with the IEEE fp32 dot (FMA units, operands
# from shared memory into registers) every candidate spilled (116 B-19 KB per thread, Triton 3.9)
# or overflowed shared memory, measured with python -m fused_mlp.aot --candidates.
PERSISTENT_DTYPES = ("bf16", "fp16", "tf32")
# The FP8 kernels' persistent variant (linear_act_fp8, W8A8): e4m3 x and W through TMA, a wgmma dot.
PERSISTENT_FP8_DTYPES = ("fp8",)

# (config, dtype bytes, the launch's constexprs) -> shared memory the compiled kernel needs
SharedEstimate = Callable[[triton.Config, int, dict], int]


@dataclass(frozen=True)
class Exclusion:
    """A config the compile check measured breaking a rule: not offered for these archs and dtypes."""

    archs: tuple[str, ...]
    dtypes: tuple[str, ...]  # "bf16", "fp16", "fp32" (IEEE dot), "tf32"
    key: tuple  # config_key
    why: str
    constexprs: tuple[tuple[str, object], ...] = ()  # only for launches with these, e.g. (("WIDTH", 128),)
    # a choice (held back from the autotuner), not a measured failure: an arch pruned like these
    # archs (Arch.pruned_like) does not inherit it
    policy: bool = False

    def applies(self, arch: str | tuple[str, ...], dtype: str, key: tuple, constexprs: dict) -> bool:
        """For `arch` (a name, or the names an arch is pruned as), `dtype`, config `key` and a launch's constexprs."""
        names = (arch,) if isinstance(arch, str) else arch
        return (key == self.key and any(a in self.archs for a in names) and dtype in self.dtypes
                and all(constexprs.get(name) == value for name, value in self.constexprs))


def is_persistent(config) -> bool:
    """A config of the persistent TMA variant (a triton.Config or its kwargs)."""
    return bool(getattr(config, "kwargs", config).get("PERSISTENT", False))


# The AMD backend's knobs, as the label shows them: waves per EU (occupancy the register
# allocator aims for), the MFMA's non-K dimension (16: 16x16 MFMAs), kpack (K elements per LDS read).
AMD_KNOBS = {"waves_per_eu": "wpe", "matrix_instr_nonkdim": "nk", "kpack": "kp"}


def variant_flags(kwargs: dict) -> tuple[str, ...]:
    """What tells a config apart beyond its tile: the persistent variant's ("tma", "sub2") or
    ("tma",), then an AMD config's knobs ("wpe2", "nk16", "kp2"); () for an NVIDIA tile config."""
    flags = ()
    if kwargs.get("PERSISTENT", False):
        subtile = kwargs.get("EPILOGUE_SUBTILE", 1)
        flags = ("tma",) + ((f"sub{subtile}",) if subtile > 1 else ())
    return flags + tuple(f"{short}{kwargs[knob]}" for knob, short in AMD_KNOBS.items() if knob in kwargs)


def config_key(config: triton.Config) -> tuple:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages), with the block sizes the config has,
    then the persistent variant's flags (see variant_flags)."""
    tiles = tuple(config.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K") if k in config.kwargs)
    return (*tiles, config.num_warps, config.num_stages, *variant_flags(config.kwargs))


# Row tiles per column sweep in the grouped tile order (see _matmul_common.grouped_tile):
# Triton tutorial 03's value, in every GEMM config.
GROUP_M = 8


def _gemm_config(bm, bn, bk, stages, warps, **variant) -> triton.Config:
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": GROUP_M, **variant},
                         num_stages=stages, num_warps=warps)


def _persistent(subtile: int) -> dict:
    # warp_specialize compiles to the very same PTX on sm_90 (Triton 3.6 and 3.9, measured); it is
    # on so that the Blackwell parts, which specialise, get tutorial 09's form.
    return {"PERSISTENT": True, "EPILOGUE_SUBTILE": subtile, "WARP_SPECIALIZE": True}


# The two-accumulator kernel in IEEE fp32 on sm_100: its 32x64x32 tile at 4 warps spills under
# Triton 3.6.0 there (68-80 B at 255 registers), at 8 warps it does not (74 registers under 3.6.0,
# 128-202 under 3.9.0, measured with python -m fused_mlp.aot --candidates). Last in the list, so
# an unmeasured arch's first-config rule reaches it only where the tiles above do not fit.
TWO_ACCUMULATOR_TILES = [(32, 64, 32, 3, 8)]


def gemm_candidates(operand_tiles: int = 1) -> list[triton.Config]:
    """Every tile-variant config a GEMM kernel may be offered. Kernels that load two weight tiles
    per K step (gated_up) hold two accumulators, so they get the BLOCK_N <= 128 tiles and
    TWO_ACCUMULATOR_TILES."""
    tiles = GEMM_TILES if operand_tiles == 1 else [t for t in GEMM_TILES if t[1] <= 128] + TWO_ACCUMULATOR_TILES
    return [_gemm_config(*t) for t in tiles]


def persistent_candidates(operand_tiles: int = 1) -> list[triton.Config]:
    """Every persistent-variant config a GEMM kernel may be offered (BLOCK_N <= 128 for two accumulators)."""
    return [_gemm_config(*t[:5], **_persistent(t[5])) for t in PERSISTENT_TILES if operand_tiles == 1 or t[1] <= 128]


# Under the interpreter: one mid-size config per variant. The persistent one splits its epilogue,
# so the tests run the subtile path too.
INTERPRETER_CONFIGS = {
    "tile": _gemm_config(32, 32, 32, 1, 4),
    "persistent": _gemm_config(32, 32, 32, 1, 4, **_persistent(2)),
}


def gemm_configs(operand_tiles: int = 1) -> list[triton.Config]:
    """What the autotuner gets: the tile config only under the interpreter (tuning there would
    only multiply test time; tests force the persistent one, see _gemm_launch.force_config),
    every candidate of both variants on a GPU (pruned per device and launch by `device_pruner`)."""
    if INTERPRETER:
        return [INTERPRETER_CONFIGS["tile"]]
    return gemm_candidates(operand_tiles) + persistent_candidates(operand_tiles)


def gemm_shared_bytes(operand_tiles: int) -> SharedEstimate:
    """Shared memory of a pipelined GEMM: num_stages buffers of the x tile and the weight tiles
    (the compiler's allocation for 2-byte and tf32 operands; IEEE fp32 uses one buffer fewer, so
    the estimate is safe there too), plus, for the persistent variant, the staging buffer of the
    TMA store (one epilogue subtile of the output)."""
    def estimate(config: triton.Config, dtype_bytes: int, constexprs: dict) -> int:
        bm, bn, bk = (config.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
        operands = config.num_stages * (bm * bk + operand_tiles * bk * bn) * dtype_bytes
        if not is_persistent(config):
            return operands
        return operands + bm * (bn // config.kwargs.get("EPILOGUE_SUBTILE", 1)) * dtype_bytes
    return estimate


DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "tf32": 4, "fp8": 1}  # fp8: e4m3 (the FP8 kernels)

# AMD (Triton's stream pipeliner): two LDS stages is its GEMM default; more only multiply LDS.
AMD_NUM_STAGES = 2
AMD_WAVES_PER_EU = 2  # ROCm's Triton GEMM tuning starts from 2 waves per EU on MI300
AMD_MATRIX_NONKDIM = 16  # 16x16 MFMAs: the decode tiles (16 rows) need them, and they fit 64 KB of LDS
# kpack 2 doubles the K elements per LDS read on gfx942; from gfx950 on the backend forces it to 1
# (and warns), so it is 1 there.
AMD_KPACK = {"gfx942": 2}


def for_arch(config: triton.Config, arch: Arch) -> triton.Config:
    """`config` in the form `arch`'s backend compiles: itself on NVIDIA; on AMD the same tile
    and warps with the AMD knobs and its stage count (a knob an NVIDIA compile would refuse);
    on RDNA (no MFMA: _arch.rocm_arch) only the stage count."""
    if arch.vendor != "amd":
        return config
    knobs = {"waves_per_eu": AMD_WAVES_PER_EU, "matrix_instr_nonkdim": AMD_MATRIX_NONKDIM,
             "kpack": AMD_KPACK.get(arch.name, 1)} if arch.tensor_core_op == "mfma" else {}
    return triton.Config({**config.kwargs, **knobs}, num_warps=config.num_warps,
                         num_stages=min(config.num_stages, AMD_NUM_STAGES))


def not_offered_because(config: triton.Config, arch: Arch, dtype: str, constexprs: dict,
                        shared_estimate: SharedEstimate, excluded: tuple[Exclusion, ...]) -> str | None:
    """Why `config` (in `arch`'s form, see for_arch) is not offered on `arch` for `dtype` (and
    the launch's constexprs), or None. The unmeasured archs' first-config rule is offered_on's."""
    if is_persistent(config) and not arch.tma:
        if arch.vendor == "amd":
            return (f"the persistent variant loads through TMA; {arch.name} (AMD Instinct) has no TMA engine, "
                    "its tensor descriptors lower to plain loads")
        return f"the persistent variant loads through TMA, which {arch.name} does not have"
    if dtype == "tf32" and not arch.tf32:
        return f"{arch.name} has no TF32 dot: fp32 runs the IEEE dot there"
    if dtype == "fp8" and (why := w8a8_missing(arch)) is not None:
        return why
    needed = shared_estimate(config, DTYPE_BYTES[dtype], constexprs)
    if needed > arch.shared_bytes_per_block:
        memory = "LDS" if arch.vendor == "amd" else "shared memory"
        return (f"needs ~{needed // 1024} KB of {memory}; {arch.name} allows "
                f"{arch.shared_bytes_per_block // 1024} KB per block")
    if is_persistent(config) and dtype not in PERSISTENT_DTYPES + PERSISTENT_FP8_DTYPES:
        return "persistent variant in IEEE fp32: spills or overflows shared memory (every candidate, measured)"
    key = config_key(config)
    own = next((rule.why for rule in excluded if rule.applies(arch.name, dtype, key, constexprs)), None)
    if own is not None or not arch.pruned_like:
        return own
    like = next((rule for rule in excluded if not rule.policy and rule.applies(arch.pruned_like, dtype, key, constexprs)),
                None)
    return like and f"{like.why} (measured on {'/'.join(like.archs)}; {arch.name} is pruned like it until measured)"


def unmeasured_because(arch: Arch) -> str:
    return (f"{arch.name} is not measured config by config yet: the first fitting config of each variant "
            "stands for it (python -m fused_mlp.aot --candidates compiles the rest)")


def offered_on(configs: list[triton.Config], arch: Arch, dtype: str, constexprs: dict,
               shared_estimate: SharedEstimate, excluded: tuple[Exclusion, ...]) -> list[str | None]:
    """not_offered_because for each config (each in `arch`'s form), and on an unmeasured arch
    every fitting config after the first of its variant (tile or persistent) not offered either."""
    reasons = [not_offered_because(c, arch, dtype, constexprs, shared_estimate, excluded) for c in configs]
    if not arch.measured:
        first = {}
        for i, (config, reason) in enumerate(zip(configs, reasons)):
            if reason is None and first.setdefault(is_persistent(config), i) != i:
                reasons[i] = unmeasured_because(arch)
    return reasons


def dtype_label(tensor, constexprs: dict) -> str:
    """The dtype a launch computes in: fp32 with a TF32 dot is "tf32"."""
    import torch

    name = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32",
            torch.float8_e4m3fn: "fp8", torch.float8_e4m3fnuz: "fp8"}[tensor.dtype]
    return "tf32" if name == "fp32" and constexprs.get("INPUT_PRECISION") == "tf32" else name


def device_pruner(shared_estimate: SharedEstimate, tensor_arg: str, excluded: tuple[Exclusion, ...] = ()):
    """An `early_config_prune` hook: keeps the configs offered on the device the call runs on (in
    its backend's form, for_arch), by its own shared-memory limit and the rules of the checked
    architecture it follows (fused_mlp._arch.device_arch); persistent (TMA) configs only when the
    launch's tensors qualify for TMA (its TMA_OK constexpr)."""
    def prune(configs, named_args, **constexprs):
        if INTERPRETER:
            return configs
        import torch

        t = named_args[tensor_arg]
        arch = device_arch(t.device)
        # The device's own limit: an sm_86 has less than the sm_80 it follows, an RDNA card
        # (64 KB of LDS) less than the gfx950 it follows. On ROCm the LDS per workgroup is shared_memory_per_block.
        props = torch.cuda.get_device_properties(t.device)
        own = props.shared_memory_per_block_optin if arch.vendor == "nvidia" else props.shared_memory_per_block
        arch = dataclasses.replace(arch, shared_bytes_per_block=own)
        dtype = dtype_label(t, constexprs)
        if not constexprs.get("TMA_OK", False):
            configs = [c for c in configs if not is_persistent(c)]
        configs = [for_arch(c, arch) for c in configs]
        reasons = offered_on(configs, arch, dtype, constexprs, shared_estimate, excluded)
        kept = [c for c, reason in zip(configs, reasons) if reason is None]
        if not kept:
            raise RuntimeError(f"no autotune config of this kernel is offered for {dtype} on {arch.name} "
                               f"({arch.shared_bytes_per_block // 1024} KB of shared memory per block)")
        return kept

    return prune
