"""Liger-Kernel as peers of the gated ops (optional: pip install ".[peers]", liger-kernel 0.8.5).

    liger_mlp  LigerMLP's kernels: gate and up GEMMs plus SiLU * up in one Triton kernel (TMA
               tensor descriptors), the down projection a cuBLAS GEMM; forward and backward
               through LigerMLPFunction. SwiGLU only.
    liger_glu  Liger's elementwise SiLU * up (LigerSiLUMulFunction) or tanh-GELU * up
               (LigerGELUMulFunction) between cuBLAS GEMMs: what LigerSwiGLUMLP and
               LigerGEGLUMLP do.

The constraints are Liger's own (src/liger_kernel/ops/mlp.py, swiglu.py, geglu.py): LigerMLPFunction
asserts CUDA tensors, wants one dtype among fp16/bf16/fp32, and row strides that are multiples of
16 bytes (TMA); its gate/up kernel has a backward only inside the whole MLP. The elementwise
kernels take one row per program, at most 65536 columns. No bias anywhere. A case outside these
is a skip with the reason. liger-kernel is imported only here and only when a peer is used.

Under Triton's CPU interpreter (TRITON_INTERPRET=1; liger-kernel 0.8.5, Triton 3.9) none of the
kernels these peers use runs, so on the CPU both peers skip with the reason, and their adapters
are tested with torch stand-ins of Liger's functions (tests/test_training.py):
    _swiglu_forward_kernel (LigerSiLUMulFunction)  casts its scalar argument gate_multiplier
        with .to(tl.float32); the interpreter passes a Python float, which has no .to
    _geglu_tanh_forward_kernel (LigerGELUMulFunction)  calls libdevice's tanh, which has no
        interpreter implementation
    _swiglu_kernel_forward[_inference] (LigerMLP's gate/up)  @triton.autotune'd: choosing a config
        times each one through the GPU driver, which the interpreter has none of; and
        LigerMLPFunction asserts CUDA tensors before any kernel
The elementwise ones are probed (a tiny call), so a Triton or Liger release that fixes them is
used on the CPU with no edit here.
"""

from __future__ import annotations

import functools
import importlib
from importlib import metadata

from benchmarks.harness.library import interpreter_requested
from workload.case import Case

PACKAGE = "liger-kernel"
# The activation each Liger elementwise function implements (Liger's GeGLU is tanh-GELU only).
GLU_FUNCTIONS = {"silu": ("liger_kernel.ops.swiglu", "LigerSiLUMulFunction"),
                 "gelu_tanh": ("liger_kernel.ops.geglu", "LigerGELUMulFunction")}
MLP_ACTIVATION = "silu"
GLU_MAX_COLUMNS = 65536  # liger_kernel.ops.utils.calculate_settings refuses wider rows
TMA_ALIGNMENT_BYTES = 16


def version() -> str:
    """liger-kernel's version, or 'none' where it is not installed (the environment record)."""
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return "none"


@functools.cache
def not_installed() -> str | None:
    try:
        importlib.import_module("liger_kernel.ops.swiglu")
    except ImportError as e:
        return f"liger-kernel is not installed (pip install '.[peers]'): {e}"
    return None


def _glu_function(activation: str):
    module, name = GLU_FUNCTIONS[activation]
    return getattr(importlib.import_module(module), name)


def glu(gate, up, activation: str):
    """act(gate) * up by Liger's elementwise kernel (forward and backward)."""
    if activation not in GLU_FUNCTIONS:
        raise ValueError(f"activation={activation!r}: Liger's gated kernels have only {sorted(GLU_FUNCTIONS)}")
    return _glu_function(activation).apply(gate, up)


def glu_gated_up(x, w_gate, w_up, activation="silu"):
    import torch.nn.functional as F

    return glu(F.linear(x, w_gate), F.linear(x, w_up), activation)


def glu_gated_mlp(x, w_gate, w_up, w_down, activation="silu"):
    import torch.nn.functional as F

    return F.linear(glu_gated_up(x, w_gate, w_up, activation), w_down)


def mlp_gated_up(x, w_gate, w_up, activation="silu"):
    """LigerMLP's fused gate/up kernel alone, its inference path (no G and U stored)."""
    _check_mlp_activation(activation)
    from liger_kernel.ops.mlp import gemm_swiglu

    out, _ = gemm_swiglu(x.unsqueeze(0), w_gate, w_up, 1.0, store_preact=False)
    return out.squeeze(0)


def mlp_gated_mlp(x, w_gate, w_up, w_down, activation="silu"):
    """LigerMLPFunction: the fused gate/up kernel, then the down GEMM (input [B, S, dim])."""
    _check_mlp_activation(activation)
    from liger_kernel.ops.mlp import LigerMLPFunction

    return LigerMLPFunction.apply(x.unsqueeze(0), w_gate, w_up, w_down).squeeze(0)


def _check_mlp_activation(activation):
    if activation != MLP_ACTIVATION:
        raise ValueError(f"activation={activation!r}: LigerMLP is SwiGLU only ({MLP_ACTIVATION})")


@functools.cache
def _interpreter_failure(activation: str) -> str | None:
    """Why Liger's elementwise kernel fails under Triton's CPU interpreter, or None (a tiny
    probe, so a Triton or Liger release that fixes it is used with no edit here)."""
    import torch

    gate, up = torch.ones(2, 16, requires_grad=True), torch.ones(2, 16, requires_grad=True)
    try:
        out = glu(gate, up, activation)
        torch.autograd.grad(out, (gate, up), torch.ones_like(out))
    except Exception as e:  # noqa: BLE001 - the interpreter raises its own error types
        return (f"liger_glu: Liger's {activation} kernel does not run under Triton's CPU interpreter "
                f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")
    return None


def glu_unavailable(case: Case, device: str) -> str | None:
    if case.activation not in GLU_FUNCTIONS:
        return f"liger_glu has no {case.activation} kernel (only {sorted(GLU_FUNCTIONS)}; its GeGLU is tanh-GELU)"
    if case.N > GLU_MAX_COLUMNS:
        return f"liger_glu takes rows of at most {GLU_MAX_COLUMNS} columns, not N={case.N}"
    if not_installed():
        return not_installed()
    if device != "cuda":
        if not interpreter_requested():
            return "liger_glu's Triton kernels need CUDA (or TRITON_INTERPRET=1 on the CPU)"
        return _interpreter_failure(case.activation)
    return None


def mlp_unavailable(case: Case, device: str) -> str | None:
    if case.activation != MLP_ACTIVATION:
        return f"liger_mlp is SwiGLU only: LigerMLP has no {case.activation} kernel"
    bad = [f"{name}={n}" for name, n in (("K", case.K), ("N", case.N)) if n * case.itemsize % TMA_ALIGNMENT_BYTES]
    if bad:
        return (f"liger_mlp needs {TMA_ALIGNMENT_BYTES}-byte aligned rows for its TMA descriptors "
                f"({', '.join(bad)} x {case.itemsize} bytes)")
    if not_installed():
        return not_installed()
    if device != "cuda":
        return ("liger_mlp needs CUDA: LigerMLPFunction asserts CUDA tensors, and its autotuned gate/up "
                "kernel times its configs through the GPU driver, which Triton's CPU interpreter has none of")
    return None


def mlp_gated_up_no_backward() -> str | None:
    return "liger_mlp: Liger's fused gate/up kernel has a backward only inside LigerMLPFunction (the whole MLP)"
