"""Every implementation of every op, looked up by name, each with the op's call signature.

    fused     fused_mlp's public function named like the op, from the commit under test
    eager     the op's plain PyTorch code (ops/<op>.py)
    compile   torch.compile of that eager code
    <peer>    the op's peers (ops/<op>.py `peers`, e.g. linear_act's cublaslt)

Benchmarks, tests and tools iterate over `names(op)`; nothing special-cases an implementation.
`unavailable_reason` says why one cannot run somewhere (no CUDA, no such epilogue, a commit
whose library lacks the op), so a benchmark skips it with that reason instead of failing.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from .library import library
from .ops import OPS, op_spec
from .workloads import Case

FUSED, EAGER, COMPILE = "fused", "eager", "compile"


def interpreter_requested() -> bool:
    """TRITON_INTERPRET is set: Triton runs the kernels on the CPU (correctness, not speed)."""
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "on", "yes")


def names(op: str) -> list[str]:
    """The implementations of `op`, fused first."""
    return [FUSED, EAGER, COMPILE, *op_spec(op).peers]


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
    if name == COMPILE:
        return lambda *args, **kwargs: compiled(op)(*args, **kwargs)
    return spec.peers[name].call


def unavailable_reason(case: Case, name: str, device) -> str | None:
    """Why implementation `name` cannot run `case` on `device`, or None when it can."""
    check_name(case.op, name)
    device_type = str(device).split(":")[0]
    if name == FUSED:
        if device_type == "cpu" and not interpreter_requested():
            return "the Triton kernels need CUDA (or TRITON_INTERPRET=1 on the CPU, a pipeline check only)"
        if not callable(getattr(library(), case.op, None)):
            return f"fused_mlp at this commit has no public {case.op}()"
        return None
    peer = case.spec.peers.get(name)
    return peer.unavailable(case, device_type) if peer else None


def prepare(case: Case, name: str, inputs: dict) -> Callable[[], object]:
    """A zero-argument call of implementation `name` on fixed `inputs`, for timing and profiling
    (the inputs must not change while the call is used)."""
    check_name(case.op, name)
    if name == FUSED:
        return case.spec.fused(library(), inputs)
    fn = get(case.op, name)
    return lambda: fn(**inputs)


_compiled: dict[str, Callable] = {}


def compiled(op: str) -> Callable:
    """torch.compile of the eager code for `op`, built once per process (shapes are specialised
    by Dynamo's own guards, one graph per shape and activation)."""
    import torch

    if op not in _compiled:
        _compiled[op] = torch.compile(op_spec(op).eager, dynamic=False)
    return _compiled[op]


def reset_compiled() -> None:
    """Forget every compiled graph. Call between workloads in one process: Dynamo recompiles per
    shape and, past its recompile limit (8), silently falls back to eager, which would time
    eager under the name compile."""
    import torch

    _compiled.clear()
    torch._dynamo.reset()


__all__ = ["COMPILE", "EAGER", "FUSED", "OPS", "check_name", "compiled", "get", "interpreter_requested", "library", "names",
           "prepare", "reset_compiled", "unavailable_reason"]
