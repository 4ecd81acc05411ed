"""The training modes: one implementation's backward (or forward + backward) step on fixed inputs,
its gradient check against a float64 autograd reference, its samples and its peak memory.

    forward   one call under inference_mode: the suite's original numbers (bench_ops)
    backward  the backward pass alone, for a fixed upstream gradient; the forward that builds its
              graph runs before every sample, outside the timed region
    full      forward + backward in the timed region

Gradients come from torch.autograd.grad, not .backward(): nothing accumulates into .grad, so
every call does the same work, and an input the output does not depend on is an error (a
wrong gradient), never a silent zero.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from workload.modes import BACKWARD, FORWARD, FULL, MODES, TRAINING_MODES, check_mode  # noqa: F401 (re-exported)
from benchmarks.harness.ops import output_features, spec_of
from benchmarks.harness.references import mismatch
from benchmarks.harness.tensors import torch_dtype
from benchmarks.harness.tolerances import gradient_tolerance
from workload.case import Case

# The same L2 flush as timing.latency_samples: bigger than any GPU's L2 (H200: 50 MB).
_FLUSH_BYTES = 256 * 1024 * 1024


def named_tensors(inputs: dict) -> dict[str, torch.Tensor]:
    """Every floating-point tensor among an op's inputs, by name (list items as name[i])."""
    found = {}
    for name, value in inputs.items():
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            found[name] = value
        elif isinstance(value, (list, tuple)):
            found.update({f"{name}[{i}]": t for i, t in enumerate(value)
                          if isinstance(t, torch.Tensor) and t.is_floating_point()})
    return found


def require_grad(inputs: dict) -> dict[str, torch.Tensor]:
    """Mark every floating-point input (x, each weight and bias) as requiring grad, in place."""
    tensors = named_tensors(inputs)
    for t in tensors.values():
        t.requires_grad_(True)
    return tensors


def upstream_gradient(case: Case, device, seed: int = 1) -> torch.Tensor:
    """The fixed gradient of the loss w.r.t. the op's output (N(0, 1), the output's dtype)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    shape = (case.M, output_features(case))
    return torch.randn(*shape, generator=gen, device=device, dtype=torch.float32).to(torch_dtype(case))


@dataclass
class Step:
    """One training call of an implementation: `before()` runs outside the timed region,
    `timed(state)` inside it; calling the Step runs both."""

    mode: str
    forward: Callable[[], torch.Tensor]  # the implementation on inputs that require grad
    tensors: dict[str, torch.Tensor]  # what the gradients are taken of, by name
    grad_out: torch.Tensor

    def gradients(self, out: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if not isinstance(out, torch.Tensor) or out.grad_fn is None:
            raise RuntimeError("the output has no autograd graph: the implementation does not train")
        return torch.autograd.grad(out, list(self.tensors.values()), self.grad_out)

    def before(self):
        return self.forward() if self.mode == BACKWARD else None

    def timed(self, state):
        return self.gradients(state if self.mode == BACKWARD else self.forward())

    def __call__(self):
        return self.timed(self.before())


def prepare_step(case: Case, forward: Callable[[], torch.Tensor], tensors: dict[str, torch.Tensor],
                 mode: str) -> Step:
    """A Step of `mode` ("backward" or "full") for `forward`, whose inputs `tensors` require grad."""
    if mode not in TRAINING_MODES:
        raise ValueError(f"mode={mode!r} is not a training mode; expected one of {list(TRAINING_MODES)}")
    device = next(iter(tensors.values())).device
    return Step(mode, forward, tensors, upstream_gradient(case, device))


def reference_gradients(case: Case, inputs: dict, grad_out: torch.Tensor) -> dict[str, torch.Tensor]:
    """d(loss)/d(every input) in float64, by autograd through the op's float64 reference, on
    the same input values (the low-precision inputs, widened exactly)."""
    def widened(value):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            return value.detach().double().requires_grad_(True)
        if isinstance(value, (list, tuple)):
            return [widened(v) for v in value]
        return value

    inputs64 = {name: widened(value) for name, value in inputs.items()}
    tensors64 = named_tensors(inputs64)
    with torch.enable_grad():
        ref = spec_of(case).reference(**inputs64)
        grads = torch.autograd.grad(ref, list(tensors64.values()), grad_out.double())
    return dict(zip(tensors64, grads))


def gradient_mismatch(case: Case, step: Step, inputs: dict) -> str | None:
    """Why the Step's gradients are wrong (the first bad one, named), or None when every
    gradient of x, each weight and each bias is within its own bound (tolerances.gradient_tolerance)."""
    try:
        with torch.enable_grad():
            grads = step()
    except RuntimeError as e:  # e.g. an input the output does not depend on
        return f"no gradient: {str(e).splitlines()[0]}"
    return gradients_problem(case, inputs, step.grad_out, grads)


def gradients_problem(case: Case, inputs: dict, grad_out: torch.Tensor, grads) -> str | None:
    """Why `grads` (one Step call's result, in `named_tensors(inputs)` order) are not the
    gradients of `case` for the upstream gradient `grad_out`, or None."""
    expected = reference_gradients(case, inputs, grad_out)
    if not isinstance(grads, (tuple, list)) or len(grads) != len(expected):
        return f"expected {len(expected)} gradients ({', '.join(expected)}), got {type(grads).__name__}"
    dtype = torch_dtype(case)
    for (name, ref), grad in zip(expected.items(), grads):
        problem = mismatch(grad.detach(), ref, dtype, gradient_tolerance(case, name))
        if problem:
            return f"gradient of {name}: {problem}"
    return None


def step_samples(step: Step, device, samples: int, warmup: int) -> list[float]:
    """Seconds of the timed part of each call (CUDA events, cold L2, as timing.latency_samples;
    on the CPU this process's CPU time, as timing.latency_samples: a pipeline check only)."""
    device = torch.device(device)
    for _ in range(warmup):
        step()
    if device.type != "cuda":
        out = []
        for _ in range(samples):
            state = step.before()
            start = time.process_time()
            step.timed(state)
            out.append(time.process_time() - start)
            del state
        return out
    flush = torch.empty(_FLUSH_BYTES, dtype=torch.int8, device=device)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    torch.cuda.synchronize(device)
    for start, end in zip(starts, ends):
        flush.zero_()
        state = step.before()
        start.record()
        step.timed(state)
        end.record()
        del state
    torch.cuda.synchronize(device)
    return [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)]


def peak_memory(step: Step) -> int:
    """CUDA memory the timed part needs above what exists when it starts: for `backward`, the
    backward's own peak above the forward's saved tensors; for `full`, the activations saved for
    backward plus the backward's peak (what Liger's benchmarks report, less the inputs)."""
    torch.cuda.synchronize()
    state = step.before()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    grads = step.timed(state)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del grads, state
    return peak


def kernels_per_step(step: Step) -> float:
    """Device kernels of the timed part: the whole step for `full`, the step less its forward
    for `backward` (CUDA only)."""
    from benchmarks.harness.profiling import kernels_per_call

    total = kernels_per_call(step)
    return total - kernels_per_call(step.forward) if step.mode == BACKWARD else total
