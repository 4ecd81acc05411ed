"""One training benchmark's set-up and metrics (bench_training.py's classes stay thin).

set_up refuses what cannot run here (NotImplementedError: asv records a skip) and checks every
gradient against the float64 reference before anything is timed: a wrong gradient raises
AssertionError, so asv records a failure (null), never a time.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from . import cost, implementations, training
from .tensors import make_inputs
from .workloads import Case

# Set-up, warm-up and samples of a training step are ~3 forwards; on the CPU keep to small cases.
CPU_MAX_TRAINING_FLOPS = 2e9


def set_up(case: Case, impl: str, mode: str, device: str,
           prepare: Callable[..., training.Step] = implementations.prepare) -> training.Step:
    """The checked Step of `impl` on `case` in `mode` ("backward" or "full")."""
    if mode not in training.TRAINING_MODES:
        raise ValueError(f"mode={mode!r}; the training benchmarks take {list(training.TRAINING_MODES)}")
    reason = implementations.unavailable_reason(case, impl, device, mode)
    if reason:
        raise NotImplementedError(reason)
    if device == "cpu" and 3 * cost.flops(case) > CPU_MAX_TRAINING_FLOPS:
        raise NotImplementedError(f"{3 * cost.flops(case):.2g} flops per step is too large for a CPU run")
    try:
        inputs = make_inputs(case, device)
        step = prepare(case, impl, inputs, mode)
        problem = training.gradient_mismatch(case, step, inputs)  # first call: compiles, autotunes
    except torch.cuda.OutOfMemoryError as e:
        raise NotImplementedError(f"does not fit in device memory: {e}") from None
    if problem:
        raise AssertionError(f"{impl} computes a wrong gradient for {case.key} ({mode}): {problem}")
    return step


def latency(step: training.Step, device: str, samples: int, warmup: int) -> dict:
    """asv's samples form: {"samples": [seconds...], "number": 1}."""
    return {"samples": training.step_samples(step, device, samples, warmup), "number": 1}


def kernels(step: training.Step) -> float:
    """Device kernels of the timed part: the whole step for `full`, the step less its forward
    for `backward` (CUDA only)."""
    from .profiling import kernels_per_call

    total = kernels_per_call(step)
    return total - kernels_per_call(step.forward) if step.mode == training.BACKWARD else total
