"""A Case's inputs as tensors, built from its op's description (ops/<op>.py `inputs`); with the
torch dtypes and activations of numerics.py, under the names everyone imports them by."""

from __future__ import annotations

import dataclasses

import torch


from workload.fp8_dtypes import is_fp8
from benchmarks.harness.fp8_quantize import quantize_inputs
from benchmarks.harness.numerics import ACTIVATION_FNS, TORCH_DTYPES, F, activation_fn, f64, rounded, torch_dtype
from benchmarks.harness.ops import RandomTensor, spec_of
from workload.case import Case

__all__ = ["ACTIVATION_FNS", "F", "TORCH_DTYPES", "activation_fn", "f64", "make_inputs", "rounded", "torch_dtype"]


def make_inputs(case: Case, device="cpu", seed: int = 0) -> dict:
    """Fresh random inputs for `case`, as keyword arguments of its op (and of every
    implementation of it); the same seed gives the same inputs."""
    if is_fp8(case.dtype):  # the same Case's bf16 inputs, quantized to e4m3
        return quantize_inputs(case, make_inputs(dataclasses.replace(case, dtype="bf16"), device, seed))
    gen = torch.Generator(device=device).manual_seed(seed)
    dtype = torch_dtype(case)

    def build(value):
        if isinstance(value, RandomTensor):
            t = torch.randn(*value.shape, generator=gen, device=device, dtype=torch.float32)
            return (t / value.fan_in**0.5).to(dtype)
        if isinstance(value, list):
            return [build(v) for v in value]
        return value

    return {name: build(value) for name, value in spec_of(case).inputs(case).items()}
