"""Argument checks shared by the launchers: each failure names the argument and what was expected."""

import torch

from ._triton_compat import INTERPRETER

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def check_tensor(name: str, t, ndim: int | None = None, min_ndim: int | None = None) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in SUPPORTED_DTYPES:
        raise TypeError(
            f"{name} has dtype {t.dtype}; expected one of float32, float16, bfloat16"
        )
    if ndim is not None and t.dim() != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(t.shape)}")
    if min_ndim is not None and t.dim() < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dim(s), got shape {tuple(t.shape)}")


def check_same(reference_name: str, reference: torch.Tensor, **others) -> None:
    """Every tensor in `others` must share the dtype and device of `reference`."""
    for name, t in others.items():
        if t.dtype != reference.dtype:
            raise TypeError(
                f"{name} has dtype {t.dtype} but {reference_name} has {reference.dtype}; "
                "all operands must share one dtype"
            )
        if t.device != reference.device:
            raise ValueError(
                f"{name} is on {t.device} but {reference_name} is on {reference.device}; "
                "all operands must be on one device"
            )


def check_runnable_device(name: str, t: torch.Tensor) -> None:
    """Triton kernels run on a CUDA device, or on the CPU under TRITON_INTERPRET=1 only."""
    if t.device.type == "cuda":
        return
    if t.device.type == "cpu" and INTERPRETER:
        return
    if t.device.type == "cpu":
        raise ValueError(
            f"{name} is on the CPU, but the Triton kernels need a CUDA device; "
            "on a CPU-only machine set TRITON_INTERPRET=1 before importing fused_mlp"
        )
    raise ValueError(f"{name} is on {t.device}; fused_mlp kernels run on CUDA devices")


def check_shape(name: str, actual, expected, what: str) -> None:
    if tuple(actual) != tuple(expected):
        raise ValueError(f"{name} has shape {tuple(actual)}; expected {tuple(expected)} ({what})")


def dot_precision(dtype: torch.dtype) -> str:
    """tl.dot input precision for fp32 operands: tf32 only where torch itself would use it.

    Follows `torch.backends.cuda.matmul.allow_tf32`, so the fused ops and the eager baselines
    round the same way. fp16/bf16 operands ignore this.
    """
    if dtype == torch.float32 and torch.backends.cuda.matmul.allow_tf32:
        return "tf32"
    return "ieee"


def check_forward_only(*tensors) -> None:
    """For the ops without a backward (the FP8 kernels): refuse to build an output that silently has no gradient."""
    if not torch.is_grad_enabled():
        return
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.requires_grad:
            raise RuntimeError(
                "fused_mlp ops are forward-only (no backward yet), but an input requires grad; "
                "call them under torch.no_grad() or torch.inference_mode()"
            )
