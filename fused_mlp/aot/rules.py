"""What makes a compiled config not ok on an architecture (the compile check's rules)."""

from __future__ import annotations

from .._arch import Arch

# dtypes whose dot runs on tensor cores (fp32 does only as tf32, when torch allows it)
TENSOR_CORE_DTYPES = ("bf16", "fp16", "tf32", "fp8")
# wgmma (sm_90) and tcgen05 (sm_100) work on tiles of 64 rows and more: smaller BLOCK_M falls
# back to mma.sync, by design.
WGMMA_MIN_BLOCK_M = 64


def problems(arch: Arch, dtype: str, config: dict, registers: int, spill_bytes: int, shared_bytes: int,
             tensor_core_ops: dict[str, int], tensor_cores: bool = True) -> list[str]:
    """Every rule a compiled config breaks on `arch`; empty when it is fine. `tensor_cores`: False
    for a kernel that has no dot (an elementwise pass), which the tensor-core rules do not concern."""
    found = []
    if shared_bytes > arch.shared_bytes_per_block:
        memory = "LDS" if arch.vendor == "amd" else "shared memory"
        found.append(f"needs {shared_bytes // 1024} KB of {memory}, {arch.name} allows "
                     f"{arch.shared_bytes_per_block // 1024} KB per block")
    if spill_bytes > 0:
        found.append(f"spills ({spill_bytes} B of spill stores per thread at {registers} registers)")
    if tensor_cores and dtype in TENSOR_CORE_DTYPES:
        if sum(tensor_core_ops.values()) == 0:
            found.append("no tensor-core instruction")
        elif (arch.tensor_core_op in ("wgmma", "tcgen05") and config.get("BLOCK_M", 0) >= WGMMA_MIN_BLOCK_M
              and tensor_core_ops.get(arch.tensor_core_op, 0) == 0):
            found.append(f"no {arch.tensor_core_op} for a {config['BLOCK_M']}-row tile (falls back to mma.sync)")
    return found
