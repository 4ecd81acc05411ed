"""Launching the GEMM kernels (linear_act, gated_up): which variant a launch may use, its grid,
and a way for tests to force one config past the autotuner.

Each GEMM kernel holds two variants behind one autotuner, told apart by the config's PERSISTENT
constexpr: the tile variant (one program per output tile, pointer loads; any strides, any GPU)
and the persistent variant (one program per SM looping over tiles, TMA through tensor
descriptors; NVIDIA sm_90 and newer, not AMD). The autotuner times both per autotune key and keeps the faster;
the persistent one is offered only when every tensor it reads or writes through TMA qualifies.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools

import torch
import triton

from .._arch import device_arch
from .._triton_compat import INTERPRETER, ensure_allocator
from ._tuning import INTERPRETER_CONFIGS, is_persistent

# Under the interpreter a few "SMs", so that each persistent program walks several tiles in the tests.
INTERPRETER_SMS = 3
# What the compile check assumes (meta tensors have no device): an H100 / H200.
COMPILE_CHECK_SMS = 132


def tma_ok(*tensors: torch.Tensor) -> bool:
    """True when TMA can read and write every one of these 2-D tensors: unit stride in the last
    dimension, 16-byte aligned base and row stride, no dimension of size 0 (a descriptor needs a
    positive extent). Otherwise the launch keeps to the tile variant; nothing is copied."""
    for t in tensors:
        rows, cols = t.shape
        if rows == 0 or cols == 0 or t.stride(1) != 1:
            return False
        if (t.stride(0) * t.element_size()) % 16 or (t.device.type != "meta" and t.data_ptr() % 16):
            return False
    return True


@functools.cache
def _cuda_sms(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def num_sms(device: torch.device) -> int:
    """How many programs the persistent variant launches at most: one per SM."""
    if device.type == "cuda":
        return _cuda_sms(device.index if device.index is not None else torch.cuda.current_device())
    return COMPILE_CHECK_SMS if device.type == "meta" else INTERPRETER_SMS


@functools.cache
def _cuda_has_tma(index: int) -> bool:
    # by the architecture, not the capability: ROCm reports 9.4 for an MI300, which has no TMA
    return device_arch(torch.device("cuda", index)).tma


def _has_tma(device: torch.device) -> bool:
    return device.type == "cuda" and _cuda_has_tma(device.index if device.index is not None
                                                   else torch.cuda.current_device())


def grid(M: int, N: int, sms: int):
    """The launch grid for a config's meta-parameters: one program per tile, or per SM."""
    def for_config(meta):
        tiles = triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])
        return (min(tiles, sms),) if meta.get("PERSISTENT", False) else (tiles,)
    return for_config


_forced: contextvars.ContextVar = contextvars.ContextVar("forced_gemm_config", default=None)


@contextlib.contextmanager
def force_config(config: triton.Config | str):
    """For tests: launch GEMM kernels with this config (or "tile" / "persistent": that variant's
    interpreter config) instead of the autotuner's choice. A persistent config on tensors that do
    not qualify for TMA, or on a GPU without TMA, falls back to the tile variant, as the
    autotuner would. Yields the list of variants that actually ran, one entry per launch."""
    config = INTERPRETER_CONFIGS[config] if isinstance(config, str) else config
    ran: list[str] = []
    token = _forced.set((config, ran))
    try:
        yield ran
    finally:
        _forced.reset(token)


def launch(kernel, args: tuple, constexprs: dict, M: int, N: int, sms: int) -> None:
    """Launch an autotuned GEMM kernel (or the forced config) over an M x N output."""
    persistent_possible = constexprs["TMA_OK"] and (INTERPRETER or _has_tma(args[0].device))
    if persistent_possible and not INTERPRETER:
        ensure_allocator()  # device-side tensor descriptors need a little global scratch
    forced = _forced.get()
    if forced is None:
        kernel[grid(M, N, sms)](*args, **constexprs)
        return
    config, ran = forced
    if is_persistent(config) and not persistent_possible:
        config = INTERPRETER_CONFIGS["tile"]
    ran.append("persistent" if is_persistent(config) else "tile")
    kernel.fn[grid(M, N, sms)](*args, **constexprs, **config.all_kwargs())
