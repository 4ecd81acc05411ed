"""The GPU architectures the kernels are tuned and checked for, and what each allows per block."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Arch:
    name: str  # "sm_90"
    capability: int  # 90
    shared_bytes_per_block: int  # the opt-in maximum of dynamic + static shared memory per block
    tensor_core_op: str  # the tensor-core instruction a large tile should use: "wgmma" or "mma"


ARCHS: dict[str, Arch] = {a.name: a for a in (
    Arch("sm_90", 90, 227 * 1024, "wgmma"),  # H100 / H200
    Arch("sm_80", 80, 163 * 1024, "mma"),  # A100
)}


def tuning_arch(capability: int) -> Arch:
    """The checked architecture whose tuning a device of this capability (e.g. 86, 90) follows."""
    return ARCHS["sm_90"] if capability >= 90 else ARCHS["sm_80"]
