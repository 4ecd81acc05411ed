"""The cost model: flops and minimum bytes moved per Case, and the roofline floor (torch-free).

Minimum bytes = every input and weight read once plus the output written once, i.e. what a
perfectly fused kernel must move; the unfused implementations move more (their intermediates
round-trip through memory), which is exactly what the bandwidth and roofline views expose.
Bytes count reads + writes, like the copy-bandwidth ceiling they are compared with. Each op's
counts live in its module under `ops/`.
"""

from __future__ import annotations

from dataclasses import dataclass

from workload import fp8_dtypes
from workload.ops import RandomTensor, output_features, spec_of
from workload.case import Case


@dataclass(frozen=True)
class Ceilings:
    """A device's measured ceilings: copy bandwidth (GB/s, read + write) and dense matmul
    throughput (TFLOP/s) per dtype name ('bf16', 'fp16', 'fp32')."""

    copy_gbps: float
    matmul_tflops: dict[str, float]

    def __post_init__(self):
        if not self.copy_gbps > 0:
            raise ValueError(f"copy_gbps={self.copy_gbps!r}; expected a positive number")
        for dtype, tflops in self.matmul_tflops.items():
            if not tflops > 0:
                raise ValueError(f"matmul_tflops[{dtype!r}]={tflops!r}; expected a positive number")


def copy_gbps(nbytes: int, seconds: float) -> float:
    """Bandwidth of a copy of nbytes (read + written) that took `seconds`."""
    return 2 * nbytes / seconds / 1e9


def matmul_tflops(n: int, seconds: float) -> float:
    """Throughput of an n x n x n matmul that took `seconds`."""
    return 2 * n**3 / seconds / 1e12


def flops(case: Case) -> int:
    """Floating-point operations of the matmuls (2 per multiply-add); the bias, activation and
    gating add O(M*N) work, under 1% at every shape in the grids, and are left out."""
    return spec_of(case).flops(case)


def min_bytes(case: Case) -> int:
    """Bytes a perfectly fused implementation must read and write."""
    if fp8_dtypes.is_fp8(case.dtype):  # one byte per e4m3 element, bf16 out
        return _fp8_min_bytes(case)
    return spec_of(case).min_elements(case) * case.itemsize


def arithmetic_intensity(case: Case) -> float:
    """Flops per byte of minimum traffic: the x axis of the roofline."""
    return flops(case) / min_bytes(case)


def floor_seconds(case: Case, ceilings: Ceilings) -> float:
    """The roofline floor: no implementation can beat max(compute time, memory time)."""
    roof = roof_dtype(case)
    if roof not in ceilings.matmul_tflops:
        raise ValueError(f"ceilings have no matmul TFLOP/s for {roof}; have {sorted(ceilings.matmul_tflops)}")
    compute = flops(case) / (ceilings.matmul_tflops[roof] * 1e12)
    memory = min_bytes(case) / (ceilings.copy_gbps * 1e9)
    return max(compute, memory)


def roof_dtype(case: Case) -> str:
    """The matmul ceiling a Case runs against: its dtype's, the FP8 one for W8A8 (fp8,
    fp8_tensor), bf16's for W8A16 (its weights are up-cast to bf16 before the dot)."""
    return fp8_dtypes.ROOF_DTYPE.get(case.dtype, case.dtype)


def _fp8_min_bytes(case: Case) -> int:
    """What a perfect FP8 kernel moves: x at X_BYTES, every weight at one byte per element, the
    bias and output in bf16, and the fp32 scales."""
    inputs = spec_of(case).inputs(case)
    total = case.M * output_features(case) * fp8_dtypes.OUT_BYTES
    rows = 1 if fp8_dtypes.granularity(case.dtype) == "tensor" else None
    for name, value in inputs.items():
        if not isinstance(value, RandomTensor):
            continue
        elements = 1
        for size in value.shape:
            elements *= size
        if name == "x":
            total += elements * fp8_dtypes.X_BYTES[case.dtype]
            if fp8_dtypes.form(case.dtype) == "w8a8":
                total += (rows or value.shape[0]) * fp8_dtypes.SCALE_BYTES
        elif name == "bias":
            total += elements * fp8_dtypes.OUT_BYTES
        else:
            total += elements + (rows or value.shape[0]) * fp8_dtypes.SCALE_BYTES
    return total
