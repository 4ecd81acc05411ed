"""The suite's FP8 dtypes as plain data (no torch; only workloads.py's x bytes): what workloads.py,
numerics.py, cost.py and the dashboard need to know of fp8 / fp8_tensor / w8a16. fp8.py says what
they are and how they run."""

from __future__ import annotations

from workload.case import FP8_X_BYTES

# dtype -> (form, granularity of the scales)
FP8_DTYPES = {"fp8": ("w8a8", "row"), "fp8_tensor": ("w8a8", "tensor"), "w8a16": ("w8a16", "row")}
# Bytes of x's elements (Case.itemsize); the weights are 1 byte, the bf16 output and bias 2.
X_BYTES = FP8_X_BYTES
OUT_BYTES = 2
SCALE_BYTES = 4
# The matmul roof each dtype runs on: FP8 tensor cores for W8A8, bf16's for W8A16 (its weights
# are up-cast to bf16 before the dot).
ROOF_DTYPE = {"fp8": "fp8", "fp8_tensor": "fp8", "w8a16": "bf16"}
FP8_OPS = {"linear_act": "linear_act_fp8", "gated_mlp": "gated_mlp_fp8"}  # suite op -> fused_mlp function
SCALED_MM, SCALED_MM_COMPILE = "scaled_mm", "scaled_mm_compile"
FP8_PEERS = (SCALED_MM, SCALED_MM_COMPILE)  # the FP8 ops' peers (harness/fp8_peers.py)
# What an FP8 Case is run by; every other implementation (cuBLASLt's bf16 epilogue, Liger,
# max-autotune) has no FP8 form and skips.
FP8_IMPLEMENTATIONS = ("fused", "eager", "compile", SCALED_MM, SCALED_MM_COMPILE)
# The stored hidden of a W8A8 gated MLP is e4m3 (per-token requantized): implementations that
# round the bf16 hidden differently (eager's bf16 gate and up) re-round some of its elements by
# one e4m3 step, so their results agree to e4m3's unit roundoff (2^-4), not bf16's.
E4M3_UNIT_ROUNDOFF = 2.0**-4
WEIGHT_NAMES = {"linear_act": ("weight",), "gated_mlp": ("w_gate", "w_up", "w_down")}
SCALE_NAMES = {"weight": "weight_scale", "w_gate": "gate_scale", "w_up": "up_scale", "w_down": "down_scale"}


def is_fp8(dtype: str) -> bool:
    return dtype in FP8_DTYPES


def form(dtype: str) -> str:
    return FP8_DTYPES[dtype][0]


def granularity(dtype: str) -> str:
    return FP8_DTYPES[dtype][1]


def storage_tolerance(case) -> float:
    """The storage term of the Case's tolerance (harness.tolerances): the bf16 output's, or
    e4m3's where a W8A8 gated MLP stores its hidden in e4m3."""
    if case.op == "gated_mlp" and form(case.dtype) == "w8a8":
        return E4M3_UNIT_ROUNDOFF
    return 1e-2  # bf16 out, as tolerances.STORAGE["bf16"]
