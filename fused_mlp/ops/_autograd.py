"""What the ops' torch.autograd.Functions share: when a call trains, and the double-backward refusal.

A call trains when grad mode is on and some input requires grad; every other call (no_grad,
inference_mode, or plain tensors) runs the inference kernels exactly as before, saving nothing.
"""

import torch


def trains(*tensors) -> bool:
    """True when this call must build a graph: grad mode on and an input requires grad."""
    return torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors)


def refuse_double_backward(op: str) -> None:
    """Called first in every backward: the backward kernels are not themselves differentiable."""
    if torch.is_grad_enabled():
        raise RuntimeError(
            f"fused_mlp.{op}: double backward is not supported (backward ran with create_graph=True); "
            "its backward kernels are not differentiable. Use the unfused torch ops for higher-order gradients"
        )


def check_grad_output(op: str, dy: torch.Tensor, shape, dtype) -> None:
    """The upstream gradient as autograd hands it: the output's shape and dtype."""
    if tuple(dy.shape) != tuple(shape) or dy.dtype != dtype:
        raise RuntimeError(f"fused_mlp.{op}: the upstream gradient has shape {tuple(dy.shape)} and dtype "
                           f"{dy.dtype}; expected {tuple(shape)} and {dtype}")
