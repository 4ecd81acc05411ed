"""Autotune candidates, which of them are offered on which GPU, and the hook that prunes the rest.

A candidate is offered for an architecture and dtype unless its estimated shared memory exceeds
what a block may use there, or the compile check measured it breaking a rule there (the kernel's
exclusions: spills, no tensor cores). `python -m fused_mlp.aot` compiles every offered config for
sm_90 and sm_80 and fails when one of them breaks a rule, so the exclusions and the estimates stay
honest; at run time the autotuner only benchmarks what is offered on the device it runs on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import triton

from .._arch import Arch, tuning_arch
from .._triton_compat import INTERPRETER

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

    def applies(self, arch: str, dtype: str, key: tuple, constexprs: dict) -> bool:
        return (key == self.key and arch in self.archs and dtype in self.dtypes
                and all(constexprs.get(name) == value for name, value in self.constexprs))


def config_key(config: triton.Config) -> tuple:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages), with the block sizes the config has."""
    tiles = tuple(config.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K") if k in config.kwargs)
    return (*tiles, config.num_warps, config.num_stages)


def gemm_candidates(operand_tiles: int = 1) -> list[triton.Config]:
    """Every tile config a GEMM kernel may be offered. Kernels that load two weight tiles per K
    step (gated_up) hold two accumulators, so they get the BLOCK_N <= 128 tiles."""
    tiles = [t for t in GEMM_TILES if operand_tiles == 1 or t[1] <= 128]
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_stages=stages,
                          num_warps=warps)
            for bm, bn, bk, stages, warps in tiles]


def gemm_configs(operand_tiles: int = 1) -> list[triton.Config]:
    """What the autotuner gets: one mid-size tile under the interpreter (tuning there would only
    multiply test time), every candidate on a GPU (pruned per device by `device_pruner`)."""
    if INTERPRETER:
        return [triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 8})]
    return gemm_candidates(operand_tiles)


def gemm_shared_bytes(operand_tiles: int) -> SharedEstimate:
    """Shared memory of a pipelined tile GEMM: num_stages buffers of the x tile and the weight
    tiles (the compiler's allocation for 2-byte and tf32 operands; IEEE fp32 uses one buffer
    fewer, so the estimate is safe there too)."""
    def estimate(config: triton.Config, dtype_bytes: int, constexprs: dict) -> int:
        bm, bn, bk = (config.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
        return config.num_stages * (bm * bk + operand_tiles * bk * bn) * dtype_bytes
    return estimate


DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "tf32": 4}


def not_offered_because(config: triton.Config, arch: Arch, dtype: str, constexprs: dict,
                        shared_estimate: SharedEstimate, excluded: tuple[Exclusion, ...]) -> str | None:
    """Why `config` is not offered on `arch` for `dtype` (and the launch's constexprs), or None."""
    needed = shared_estimate(config, DTYPE_BYTES[dtype], constexprs)
    if needed > arch.shared_bytes_per_block:
        return (f"needs ~{needed // 1024} KB of shared memory; {arch.name} allows "
                f"{arch.shared_bytes_per_block // 1024} KB per block")
    key, tuned_as = config_key(config), tuning_arch(arch.capability).name
    return next((rule.why for rule in excluded if rule.applies(tuned_as, dtype, key, constexprs)), None)


def dtype_label(tensor, constexprs: dict) -> str:
    """The dtype a launch computes in: fp32 with a TF32 dot is "tf32"."""
    import torch

    name = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}[tensor.dtype]
    return "tf32" if name == "fp32" and constexprs.get("INPUT_PRECISION") == "tf32" else name


def device_pruner(shared_estimate: SharedEstimate, tensor_arg: str, excluded: tuple[Exclusion, ...] = ()):
    """An `early_config_prune` hook: keeps the configs offered on the device the call runs on, by
    its own shared-memory limit and the exclusions of the architecture it is tuned as."""
    def prune(configs, named_args, **constexprs):
        if INTERPRETER:
            return configs
        import torch

        t = named_args[tensor_arg]
        major, minor = torch.cuda.get_device_capability(t.device)
        capability = 10 * major + minor
        props = torch.cuda.get_device_properties(t.device)
        arch = Arch(f"sm_{capability}", capability, props.shared_memory_per_block_optin,
                    tuning_arch(capability).tensor_core_op)
        dtype = dtype_label(t, constexprs)
        kept = [c for c in configs if not_offered_because(c, arch, dtype, constexprs, shared_estimate, excluded) is None]
        if not kept:
            raise RuntimeError(f"no autotune config of this kernel is offered for {dtype} on {arch.name} "
                               f"({arch.shared_bytes_per_block // 1024} KB of shared memory per block)")
        return kept

    return prune
