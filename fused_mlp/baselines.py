"""The unfused ways people write each op, with the same call signature as the fused op.

- eager: nn.Linear-style F.linear calls plus separate activation/multiply kernels (the gated MLP
  launches 3 GEMMs + activation + multiply = 5 kernels, as in the seed article);
- compile: torch.compile of the eager code (Inductor fuses the pointwise tail, not the GEMMs);
- cublaslt: torch._addmm_activation, cuBLASLt's GEMM with a bias+ReLU/GELU(tanh) epilogue, on
  CUDA only and only for the activations cuBLASLt has.

These stay deliberately plain: the baseline line on the dashboard must move only when torch does.
"""

from collections.abc import Callable

import torch
import torch.nn.functional as F

from .activations import get_activation


def eager_linear_act(x, weight, bias=None, activation="gelu_tanh"):
    return get_activation(activation).torch_fn(F.linear(x, weight, bias))


def eager_gated_up(x, w_gate, w_up, activation="gelu_tanh"):
    return get_activation(activation).torch_fn(F.linear(x, w_gate)) * F.linear(x, w_up)


def eager_gated_mlp(x, w_gate, w_up, w_down, activation="gelu_tanh"):
    return F.linear(eager_gated_up(x, w_gate, w_up, activation), w_down)


def eager_narrow_mlp(x, weights, biases=None, activation="relu", output_activation=None):
    hidden_act = get_activation(activation).torch_fn
    out_act = get_activation(output_activation or "none", "output_activation").torch_fn
    biases = biases if biases is not None else [None] * len(weights)
    h = x
    for i, (w, b) in enumerate(zip(weights, biases)):
        h = F.linear(h, w, b)
        h = hidden_act(h) if i < len(weights) - 1 else out_act(h)
    return h


EAGER: dict[str, Callable] = {
    "linear_act": eager_linear_act,
    "gated_up": eager_gated_up,
    "gated_mlp": eager_gated_mlp,
    "narrow_mlp": eager_narrow_mlp,
}

# cuBLASLt's epilogues: ReLU, and GELU with the tanh approximation (torch's CUDA fallback for
# use_gelu also uses tanh; its CPU path uses erf, another reason this baseline is CUDA-only).
CUBLASLT_ACTIVATIONS = {"relu": False, "gelu_tanh": True}  # name -> use_gelu


def cublaslt_linear_act(x, weight, bias=None, activation="gelu_tanh"):
    if activation not in CUBLASLT_ACTIVATIONS:
        raise ValueError(
            f"activation={activation!r}: the cuBLASLt epilogue has only {sorted(CUBLASLT_ACTIVATIONS)}"
        )
    x2 = x.reshape(-1, x.shape[-1])
    if bias is None:  # _addmm_activation needs a bias; a zero one keeps the math unchanged
        bias = torch.zeros(weight.shape[0], dtype=x.dtype, device=x.device)
    out = torch._addmm_activation(bias, x2, weight.t(), use_gelu=CUBLASLT_ACTIVATIONS[activation])
    return out.reshape(*x.shape[:-1], weight.shape[0])


_compiled: dict[str, Callable] = {}


def compiled(op: str) -> Callable:
    """torch.compile of the eager code for `op`, built once per process (shapes are specialised
    by Dynamo's own guards, one graph per shape and activation)."""
    if op not in _compiled:
        _compiled[op] = torch.compile(EAGER[op], dynamic=False)
    return _compiled[op]


def reset_compiled() -> None:
    """Forget every compiled graph. Call between workloads in one process: Dynamo recompiles per
    shape and, past its recompile limit (8), silently falls back to eager, which would time
    eager under the name compile."""
    _compiled.clear()
    torch._dynamo.reset()


def unavailable_reason(impl: str, op: str, device: torch.device, activation: str) -> str | None:
    """Why a baseline cannot run this workload here, or None when it can."""
    if impl == "cublaslt":
        if op != "linear_act":
            return f"cublaslt has no {op} (it fuses only bias + activation into one GEMM)"
        if activation not in CUBLASLT_ACTIVATIONS:
            return f"cublaslt has no {activation} epilogue (only {sorted(CUBLASLT_ACTIVATIONS)})"
        if torch.device(device).type != "cuda":
            return "cublaslt needs a CUDA device"
    return None
