"""The activation table: one row per activation, with its torch reference and its Triton helper.

Adding an activation means adding two `@triton.jit` helpers (the function, and its gradient for
the backward kernels) and one row in `ACTIVATIONS`; the ops and modules read this table. The benchmark harness keeps its own torch versions for its baselines
and references (benchmarks/harness/tensors.py), so that its control never moves with the library.
"""

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
import triton
import triton.language as tl


# GELU's constants, shared by the functions and their gradients
_SQRT_HALF = tl.constexpr(0.7071067811865476)  # 1 / sqrt(2)
_INV_SQRT_2PI = tl.constexpr(0.3989422804014327)  # 1 / sqrt(2 pi)
_GELU_TANH_K = tl.constexpr(0.7978845608028654)  # sqrt(2 / pi)
_GELU_TANH_A = tl.constexpr(0.044715)


@triton.jit
def _identity(x):
    return x


@triton.jit
def _relu(x):
    # NaN in, NaN out, as torch.relu: a numerical blow-up must not be hidden as 0
    return tl.maximum(x, 0.0, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _gelu_erf(x):
    return 0.5 * x * (1.0 + tl.erf(x * _SQRT_HALF))


@triton.jit
def _gelu_tanh(x):
    # tanh(u) = 2 * sigmoid(2u) - 1; written with exp so it needs no libdevice import, whose
    # location differs between Triton versions. Spelled out here and in the gradient: as a shared
    # helper it compiled the W8A8 epilogue differently (sm_90: a register more, 24 SASS instructions fewer).
    u = _GELU_TANH_K * (x + _GELU_TANH_A * x * x * x)
    tanh_u = 2.0 / (1.0 + tl.exp(-2.0 * u)) - 1.0
    return 0.5 * x * (1.0 + tanh_u)


@triton.jit
def _silu(x):
    return x / (1.0 + tl.exp(-x))


# Gradients: (z, dy) -> dy * act'(z) on fp32 tiles, z being the pre-activation. They take dy
# rather than returning act'(z) so that each can follow torch's own backward where it matters
# (relu passes dy through at a NaN input, as torch's threshold_backward does).


@triton.jit
def _identity_grad(z, dy):
    return dy


@triton.jit
def _relu_grad(z, dy):
    # torch: 0 where the output is <= 0 (so 0 at z = 0), dy elsewhere, NaN inputs included
    return tl.where(z <= 0.0, 0.0, dy)


@triton.jit
def _gelu_erf_grad(z, dy):
    # d/dz z * Phi(z) = Phi(z) + z * phi(z)
    cdf = 0.5 * (1.0 + tl.erf(z * _SQRT_HALF))
    pdf = _INV_SQRT_2PI * tl.exp(-0.5 * z * z)
    return dy * (cdf + z * pdf)


@triton.jit
def _gelu_tanh_grad(z, dy):
    # 0.5 z (1 + tanh u), u = k (z + a z^3): 0.5 (1 + tanh u) + 0.5 z (1 - tanh^2 u) k (1 + 3 a z^2)
    u = _GELU_TANH_K * (z + _GELU_TANH_A * z * z * z)
    tanh_u = 2.0 / (1.0 + tl.exp(-2.0 * u)) - 1.0
    du = _GELU_TANH_K * (1.0 + 3.0 * _GELU_TANH_A * z * z)
    return dy * (0.5 * (1.0 + tanh_u) + 0.5 * z * (1.0 - tanh_u * tanh_u) * du)


@triton.jit
def _silu_grad(z, dy):
    # d/dz z * s(z) = s (1 + z (1 - s))
    s = 1.0 / (1.0 + tl.exp(-z))
    return dy * (s * (1.0 + z * (1.0 - s)))


@dataclass(frozen=True)
class Activation:
    name: str
    torch_fn: Callable[[torch.Tensor], torch.Tensor]  # reference, any dtype
    triton_fn: object  # @triton.jit helper, applied to the fp32 accumulator
    triton_grad: object  # @triton.jit helper (z, dy) -> dy * act'(z), for the backward kernels
    module_types: tuple  # nn.Module forms that from_module recognises, as (type, check) pairs


def _is_gelu(approximate: str):
    return lambda m: getattr(m, "approximate", "none") == approximate


ACTIVATIONS: dict[str, Activation] = {
    a.name: a
    for a in (
        Activation("none", lambda x: x, _identity, _identity_grad, ((torch.nn.Identity, None),)),
        Activation("relu", F.relu, _relu, _relu_grad, ((torch.nn.ReLU, None),)),
        Activation("gelu", F.gelu, _gelu_erf, _gelu_erf_grad, ((torch.nn.GELU, _is_gelu("none")),)),
        Activation(
            "gelu_tanh",
            lambda x: F.gelu(x, approximate="tanh"),
            _gelu_tanh,
            _gelu_tanh_grad,
            ((torch.nn.GELU, _is_gelu("tanh")),),
        ),
        Activation("silu", F.silu, _silu, _silu_grad, ((torch.nn.SiLU, None),)),
    )
}

# Gated MLPs in the wild: GeGLU uses tanh-GELU, SwiGLU uses SiLU. Others are allowed, but these
# are the ones the baselines and grids name.
GATED_ACTIVATIONS = ("gelu_tanh", "silu")


def get_activation(name, argument: str = "activation") -> Activation:
    """The table row for `name`, or a ValueError that lists the choices."""
    if not isinstance(name, str) or name not in ACTIVATIONS:
        raise ValueError(
            f"{argument}={name!r} is not supported; expected one of {sorted(ACTIVATIONS)}"
        )
    return ACTIVATIONS[name]


def activation_of_module(module: torch.nn.Module) -> str:
    """The table name of an activation module (nn.ReLU, nn.GELU, nn.SiLU, nn.Identity, ...)."""
    for act in ACTIVATIONS.values():
        for module_type, check in act.module_types:
            if isinstance(module, module_type) and (check is None or check(module)):
                return act.name
    raise ValueError(
        f"activation module {type(module).__name__} is not one fused_mlp can fuse; "
        f"supported: nn.ReLU, nn.GELU (approximate 'none' or 'tanh'), nn.SiLU, nn.Identity"
    )
