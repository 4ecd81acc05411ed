"""Every implementation of every op, looked up by name, all with the op's call signature.

Benchmarks and tests iterate over `names(op)` and call `get(op, name)`; nothing special-cases an
implementation. `unavailable_reason` says why one cannot run somewhere (no CUDA, no such epilogue),
so a benchmark can skip it with that reason instead of failing.
"""

from collections.abc import Callable
import torch

from . import baselines
from ._triton_compat import INTERPRETER
from .ops.gated_up import gated_mlp, gated_up
from .ops.linear_act import linear_act
from .ops.narrow_mlp import narrow_mlp, narrow_mlp_packed, pack_layers

OPS = ("linear_act", "gated_up", "gated_mlp", "narrow_mlp")

FUSED: dict[str, Callable] = {
    "linear_act": linear_act,
    "gated_up": gated_up,
    "gated_mlp": gated_mlp,
    "narrow_mlp": narrow_mlp,
}

def _compiled_call(op: str) -> Callable:
    """torch.compile of the eager code, built on first call, so that listing implementations
    compiles nothing."""

    def call(*args, **kwargs):
        return baselines.compiled(op)(*args, **kwargs)

    return call


_IMPLEMENTATIONS: dict[str, dict[str, Callable]] = {
    op: {
        "fused": FUSED[op],
        "eager": baselines.EAGER[op],
        "compile": _compiled_call(op),
        **({"cublaslt": baselines.cublaslt_linear_act} if op == "linear_act" else {}),
    }
    for op in OPS
}


def _check_op(op: str) -> None:
    if op not in _IMPLEMENTATIONS:
        raise ValueError(f"op={op!r} is not known; expected one of {list(OPS)}")


def names(op: str) -> list[str]:
    """The implementations of `op`, fused first."""
    _check_op(op)
    return list(_IMPLEMENTATIONS[op])


def get(op: str, name: str) -> Callable:
    _check_op(op)
    if name not in _IMPLEMENTATIONS[op]:
        raise ValueError(f"implementation {name!r} of {op} is not known; expected one of {names(op)}")
    return _IMPLEMENTATIONS[op][name]


def unavailable_reason(op: str, name: str, device, activation: str) -> str | None:
    """Why implementation `name` of `op` cannot run on `device` with `activation`, or None."""
    get(op, name)
    device = torch.device(device)
    if name == "fused":
        if device.type == "cpu" and not INTERPRETER:
            return "the Triton kernels need CUDA (or TRITON_INTERPRET=1 on the CPU)"
        return None
    return baselines.unavailable_reason(name, op, device, activation)


def prepare(op: str, name: str, inputs: dict) -> Callable[[], object]:
    """A zero-argument call of implementation `name` on fixed `inputs`, for timing and profiling.

    What a deployment does once at load time is done here once, not inside every call: the
    fused narrow MLP packs its weights here (the inputs must not change while the call is used).
    Everything else is the plain call.
    """
    fn = get(op, name)
    if (op, name) == ("narrow_mlp", "fused"):
        packed_w, packed_b = pack_layers(inputs["weights"], inputs["biases"])
        x, weights = inputs["x"], inputs["weights"]
        return lambda: narrow_mlp_packed(x, packed_w, packed_b, weights[0].shape[1], weights[-1].shape[0],
                                         inputs["activation"], inputs["output_activation"])
    return lambda: fn(**inputs)
