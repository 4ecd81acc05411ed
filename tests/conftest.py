"""Test set-up: Triton's CPU interpreter runs the real kernels when there is no GPU.

TRITON_INTERPRET must be set before triton (and so fused_mlp) is imported: `@triton.jit`
chooses the interpreter when it decorates each kernel.
"""

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.fixture
def device():
    return DEVICE


@pytest.fixture
def poisoned_empty(monkeypatch):
    """Make every torch.empty during the test NaN-filled, so an output element a kernel forgets
    to write shows up as NaN and fails the comparison."""
    real_empty = torch.empty

    def empty(*args, **kwargs):
        t = real_empty(*args, **kwargs)
        if t.is_floating_point():
            t.fill_(float("nan"))
        return t

    monkeypatch.setattr(torch, "empty", empty)
    return empty
