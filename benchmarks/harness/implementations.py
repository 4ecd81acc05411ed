"""Every implementation of every op, looked up by name, each with the op's call signature.

    fused                 fused_mlp's public function named like the op, from the commit under test
    eager                 the op's plain PyTorch code (ops/<op>.py)
    compile               torch.compile of that eager code (default mode)
    compile_max_autotune  torch.compile(eager, mode="max-autotune-no-cudagraphs"): Inductor's
                          Triton GEMM templates compete with cuBLAS, and the pointwise epilogue
                          is fused into the template when the template wins
    <peer>                the op's peers (ops/<op>.py `peers`: linear_act's cublaslt, the gated
                          ops' liger_mlp and liger_glu)

Benchmarks, tests and tools iterate over `names(op)`; nothing special-cases an implementation.
`unavailable_reason` says why one cannot run somewhere (no CUDA, no such epilogue, a commit
whose library lacks the op or its backward, a peer not installed), so a benchmark skips it with
that reason instead of failing. Every call takes a `mode` (training.MODES); "forward" is the
default and what the suite always measured.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

from benchmarks.harness import fp8, inductor

from workload import grids, modes
from benchmarks.harness.library import interpreter_requested, library
from workload.modes import FORWARD
from benchmarks.harness.ops import OPS, op_spec, spec_of
from workload.ops import COMPILE, COMPILE_MAX_AUTOTUNE, EAGER, FUSED, implementation_names
from workload.case import Case

# torch.compile's modes, by implementation name. No CUDA graphs: the suite times single calls
# with their launch overhead, as every other implementation is timed.
COMPILE_MODES = {COMPILE: None, COMPILE_MAX_AUTOTUNE: inductor.MAX_AUTOTUNE_MODE}


def names(op: str) -> list[str]:
    """The implementations of `op`, fused first."""
    return implementation_names(op)


def check_name(op: str, name: str) -> None:
    """A ValueError that lists the choices, unless `name` is an implementation of `op`."""
    if name not in names(op):
        raise ValueError(f"implementation {name!r} of {op} is not known; expected one of {names(op)}")


def get(op: str, name: str) -> Callable:
    """Implementation `name` of `op`, with the op's call signature."""
    check_name(op, name)
    spec = op_spec(op)
    if name == FUSED:
        return spec.fused_function(library())
    if name == EAGER:
        return spec.eager
    if name in COMPILE_MODES:
        return lambda *args, **kwargs: compiled(op, COMPILE_MODES[name])(*args, **kwargs)
    return spec.peers[name].call


def unavailable_reason(case: Case, name: str, device, mode: str = FORWARD) -> str | None:
    """Why implementation `name` cannot run `case` in `mode` on `device`, or None when it can."""
    check_name(case.op, name)
    modes.check_mode(mode)
    device_type = str(device).split(":")[0]
    spec = spec_of(case)
    fp8_reason = fp8.unavailable(case, name, device)
    if fp8_reason or (fp8.is_fp8(case.dtype) and mode != FORWARD):
        return fp8_reason or "the FP8 Cases are forward-only (the FP8 kernels have no backward)"
    if name == FUSED:
        if device_type == "cpu" and not interpreter_requested():
            return "the Triton kernels need CUDA (or TRITON_INTERPRET=1 on the CPU, a pipeline check only)"
        if fp8.is_fp8(case.dtype):
            return fp8.fused_missing(case, library(), device)
        if not callable(getattr(library(), case.op, None)):
            return f"fused_mlp at this commit has no public {case.op}()"
        return None if mode == FORWARD else fused_backward_missing(case, str(device))
    left_out = grids.left_out(case, name, mode, grids.current_grid())  # the grid's GPU budget
    if left_out:
        return left_out
    peer = spec.peers.get(name)
    if peer is None:  # eager and the compiled ones: torch's autograd covers them
        return None
    return peer.unavailable(case, device_type) or (None if mode == FORWARD else peer.no_backward())


# The library says whether it trains through its public API only: a commit whose fused op
# refuses inputs that require grad (or returns an output without a graph) has no backward; the
# first commit that accepts them is measured, and its gradients checked, with no edit here.
@functools.cache
def fused_backward_missing(case: Case, device: str) -> str | None:
    """Why the library under test cannot train `case`'s op, or None (probed on a few rows)."""
    import torch

    from benchmarks.harness import training
    from benchmarks.harness.tensors import make_inputs

    probe = dataclasses.replace(case, M=min(case.M, 8))
    inputs = make_inputs(probe, device)
    training.require_grad(inputs)
    try:
        with torch.enable_grad():
            out = spec_of(case).fused(library(), inputs)()
    except (ValueError, TypeError, RuntimeError, NotImplementedError) as e:
        return f"fused_mlp at this commit has no backward ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
    if not isinstance(out, torch.Tensor) or out.grad_fn is None:
        return "fused_mlp at this commit has no backward (its output has no autograd graph)"
    return None


def prepare(case: Case, name: str, inputs: dict, mode: str = FORWARD):
    """A zero-argument call of implementation `name` on fixed `inputs`, for timing and profiling
    (the inputs must not change while the call is used).

    In a training mode the inputs are marked as requiring grad (in place) and the call is a
    `training.Step`: calling it runs the forward and the backward; its `before`/`timed` halves
    let the timing leave the forward of the backward mode outside the timed region."""
    check_name(case.op, name)
    modes.check_mode(mode)
    from benchmarks.harness import training  # torch: here, not at the top (the dashboard imports this module's names)

    if fp8.is_fp8(case.dtype) and mode == FORWARD:
        return fp8.prepare(case, name, inputs, library())
    tensors = training.require_grad(inputs) if mode != FORWARD else None
    if name == FUSED:
        forward = spec_of(case).fused(library(), inputs)
    else:
        fn = get(case.op, name)
        forward = lambda: fn(**inputs)  # noqa: E731
    if mode == FORWARD:
        return forward
    return training.prepare_step(case, forward, tensors, mode)


_compiled: dict[tuple[str, str | None], Callable] = {}


def compiled(op: str, mode: str | None = None) -> Callable:
    """torch.compile of the eager code for `op` in torch.compile's `mode` (None: the default),
    built once per process (shapes are specialised by Dynamo's own guards, one graph per shape
    and activation). Inductor's FX-graph and autotune caches live on disk
    (TORCHINDUCTOR_CACHE_DIR, inductor.use_disk_caches), so a second process compiles and
    autotunes nothing again; the Inductor flags the mode relies on are checked first."""
    import torch

    if (op, mode) not in _compiled:
        inductor.use_disk_caches()
        inductor.check_config(mode)
        _compiled[op, mode] = torch.compile(op_spec(op).eager, mode=mode, dynamic=False)
    return _compiled[op, mode]


def reset_compiled() -> None:
    """Forget every compiled graph. Call between workloads in one process: Dynamo recompiles per
    shape and, past its recompile limit (8), silently falls back to eager, which would time
    eager under the name compile."""
    import torch

    _compiled.clear()
    fused_backward_missing.cache_clear()
    torch._dynamo.reset()


__all__ = ["COMPILE", "COMPILE_MAX_AUTOTUNE", "COMPILE_MODES", "EAGER", "FUSED", "OPS", "check_name", "compiled",
           "fused_backward_missing", "get", "interpreter_requested", "library", "names", "prepare", "reset_compiled",
           "unavailable_reason"]
