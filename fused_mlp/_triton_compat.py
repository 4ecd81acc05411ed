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


# Triton's interpreter (3.9) rounds fp32 -> bf16 toward zero, whatever fp_downcast_rounding says
# (measured: half the values differ from torch's round-to-nearest-even, twice its error); GPUs
# round to nearest even. Kernels whose results the tests compare through several bf16 roundings
# (the backward chain) round on the bits first under the interpreter only (to_storage).
BF16_CAST_TRUNCATES: bool = INTERPRETER


_AUTOTUNE_PARAMS = inspect.signature(triton.autotune).parameters


def autotune(configs, key, prune=None, reset_to_zero=None):
    """`triton.autotune` that caches its choices on disk where this Triton supports it, with
    `prune` as its early_config_prune hook (the configs offered on the device at hand).
    `reset_to_zero`: arguments the kernel accumulates into (split buffers some configs fill more
    rows of): zeroed before every timed run and before the chosen config's run (Triton 3.6 and 3.9).

    Caching matters because asv runs each parameter combination in its own process: without it,
    every process would re-tune.
    """
    kwargs = {}
    if "cache_results" in _AUTOTUNE_PARAMS:
        kwargs["cache_results"] = True
    if prune is not None:
        kwargs["prune_configs_by"] = {"early_config_prune": prune}
    if reset_to_zero:
        kwargs["reset_to_zero"] = list(reset_to_zero)
    return triton.autotune(configs=configs, key=key, **kwargs)


def _scratch(size: int, alignment: int, stream):
    import torch

    return torch.empty(size, dtype=torch.int8, device="cuda")


def ensure_allocator() -> None:
    """Kernels that build tensor descriptors on the device (the persistent GEMM variant) need
    Triton to allocate a little global scratch at launch. Install a torch allocator for that,
    unless the caller has installed one of their own (it is a context-wide setting)."""
    from triton.runtime import _allocation  # the same in Triton 3.6 and 3.9

    if isinstance(_allocation._allocator.get(), _allocation.NullAllocator):
        triton.set_allocator(_scratch)


def compile_for_gpu(jit_fn, args: tuple, kwargs: dict, backend_name: str, arch: int | str, warp_size: int = 32):
    """Compile `jit_fn` for a GPU without one being present: backend "cuda" with a capability
    (e.g. 90) or "hip" with a gfx name ("gfx942", warp size 64),
    specialised exactly as a launch with these arguments would be: the runtime's own binder
    decides which ints are 1, which pointers and ints are divisible by 16, and what is constexpr.
    `kwargs` holds the constexprs and the launch options (num_warps, num_stages, ...).

    Uses the binder's internals (create_function_from_signature, JITFunction._pack_args), which
    are the same in Triton 3.6 and 3.9; a Triton that moved them fails here, in one place.
    """
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature

    target = GPUTarget(backend_name, arch, warp_size)
    backend = make_backend(target)
    binder = create_function_from_signature(jit_fn.signature, jit_fn.params, backend)
    bound_args, specialization, options = binder(*args, **kwargs)
    options, signature, constexprs, attrs = jit_fn._pack_args(backend, kwargs, bound_args, specialization, options)
    return triton.compile(ASTSource(jit_fn, signature, constexprs, attrs), target=target, options=options.__dict__)
