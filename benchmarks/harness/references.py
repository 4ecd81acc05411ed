"""Float64 references and the one closeness check that tests, benchmarks and the GPU check use.

The reference follows each op's contract (`ops/<op>.py`, `OpSpec.reference`): where the op stores
an intermediate in the input dtype, the reference rounds to that dtype at the same point, and
computes everything else in float64.
"""

from __future__ import annotations

import torch

from benchmarks.harness import fp8
from benchmarks.harness.ops import spec_of
from workload.case import Case

# Relative error ||out - ref|| / ||ref||, per dtype: about a few units of rounding of the output
# dtype (fp32 with IEEE dot; fp16 2^-11; bf16 2^-8).
TOLERANCE = {torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 1e-2}


def reference(case: Case, inputs: dict):
    """The float64 reference result of `case` on `inputs`."""
    if fp8.is_fp8(case.dtype):  # from the dequantized inputs
        return fp8.reference(case, inputs)
    return spec_of(case).reference(**inputs)


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.double(), ref.double().to(out.device)
    return ((out - ref).norm() / ref.norm().clamp_min(1e-300)).item()


def mismatch(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, tolerance: float | None = None) -> str | None:
    """Why `out` is not an acceptable result for reference `ref`, or None when it is. `tolerance`:
    the Case's bound (harness.tolerances.tolerance), else the dtype's entry in TOLERANCE."""
    if out.shape != ref.shape:
        return f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
    if out.dtype != dtype:
        return f"dtype {out.dtype}, expected {dtype}"
    if torch.isnan(out).any():
        return "NaN in the output (an element left unwritten?)"
    err = rel_error(out, ref)
    limit = TOLERANCE[dtype] if tolerance is None else tolerance
    if not err <= limit:
        return f"relative error {err:.3e} > {limit:.2g} for {dtype}"
    return None


def assert_close(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, what: str = "output"):
    problem = mismatch(out, ref, dtype)
    if problem is not None:
        raise AssertionError(f"{what}: {problem}")
