"""The one place that knows about differences between Triton versions and the CPU interpreter.

The GPU runner has triton 3.6; CPU machines get the newest triton from PyPI and run the kernels
under its interpreter (TRITON_INTERPRET=1). Everything version- or interpreter-dependent lives here.
"""

import inspect
import os

import triton


def _interpreter_requested() -> bool:
    knobs = getattr(triton, "knobs", None)
    if knobs is not None and hasattr(knobs, "runtime"):
        return bool(knobs.runtime.interpret)
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


# `@triton.jit` picks the interpreter when the decorator runs, so the value at import time is the
# one that holds for every kernel in this package.
INTERPRETER: bool = _interpreter_requested()

# Triton 3.9's interpreter computes tl.dot on bf16 operands wrongly (relative error ~1e10, while
# fp16/fp32 are right). Kernels upcast bf16 dot operands to fp32 under the interpreter only; on a
# GPU the native bf16 tensor-core path runs.
def dot_upcast_needed(dtype) -> bool:
    import torch

    return INTERPRETER and dtype == torch.bfloat16


_AUTOTUNE_PARAMS = inspect.signature(triton.autotune).parameters


def autotune(configs, key):
    """`triton.autotune` that caches its choices on disk where this Triton supports it.

    Caching matters because asv runs each parameter combination in its own process: without it,
    every process would re-tune.
    """
    kwargs = {}
    if "cache_results" in _AUTOTUNE_PARAMS:
        kwargs["cache_results"] = True
    return triton.autotune(configs=configs, key=key, **kwargs)
