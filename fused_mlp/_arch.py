"""The GPU architectures the kernels are tuned and checked for, what each allows per block, and
which of them a device follows. The limits and their sources: docs/architectures.md."""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass

LOG = logging.getLogger("fused_mlp")


@dataclass(frozen=True)
class Arch:
    name: str  # "sm_90", "gfx942"
    capability: int | None  # CUDA compute capability (90); None on AMD (ROCm's reported one is not its architecture)
    shared_bytes_per_block: int  # the opt-in maximum of shared memory (NVIDIA) / LDS (AMD) per block
    tensor_core_op: str  # the matrix instruction a large tile should use: "wgmma", "tcgen05", "mma" or "mfma"
    vendor: str = "nvidia"  # "nvidia" or "amd": which Triton backend compiles for it
    tma: bool = False  # tensor descriptors load through a TMA engine (the persistent variant needs it)
    fp8_format: str | None = None  # the device's native e4m3 ("e4m3fn", OCP; "e4m3fnuz" on MI300); None: none
    tf32: bool = True  # a TF32 (or AMD xf32) dot exists; without it fp32 launches use the IEEE dot
    # Measured: the compile check has measured every candidate here and the kernels' exclusions
    # name it. An unmeasured arch is offered only the first fitting config per variant and dtype:
    # the one that the compile check compiles there clean, until a GPU or --candidates says more.
    measured: bool = True
    # Checked archs whose measured exclusions prune this one too until it is measured itself:
    # sm_100 has Hopper's 255 registers per thread, sm_120 Ampere's mma.sync (a spill there is
    # likely here); the first fitting config left is then compiled here.
    pruned_like: tuple[str, ...] = ()
    devices: str = ""

    @property
    def warp_size(self) -> int:
        """64 on AMD Instinct (CDNA: wave64, MFMA); 32 on NVIDIA and on RDNA (wave32, WMMA)."""
        return 64 if self.tensor_core_op == "mfma" else 32


ARCHS: dict[str, Arch] = {a.name: a for a in (
    Arch("sm_90", 90, 227 * 1024, "wgmma", tma=True, fp8_format="e4m3fn", devices="H100 / H200"),
    Arch("sm_80", 80, 163 * 1024, "mma", devices="A100"),
    Arch("sm_100", 100, 227 * 1024, "tcgen05", tma=True, fp8_format="e4m3fn", measured=False, pruned_like=("sm_90",),
         devices="B200 / GB200"),
    Arch("sm_120", 120, 99 * 1024, "mma", tma=True, fp8_format="e4m3fn", measured=False, pruned_like=("sm_90", "sm_80"),
         devices="RTX 50 / RTX PRO 6000"),
    Arch("gfx942", None, 64 * 1024, "mfma", vendor="amd", fp8_format="e4m3fnuz", measured=False,
         devices="MI300X / MI325X"),
    Arch("gfx950", None, 160 * 1024, "mfma", vendor="amd", fp8_format="e4m3fn", tf32=False, measured=False,
         devices="MI355X"),
)}
# The architectures the compile check covered before Blackwell and AMD: the CI default.
HOPPER_AMPERE = ("sm_90", "sm_80")
NEW_ARCHS = ("sm_100", "sm_120", "gfx942", "gfx950")
FP8_MIN_CAPABILITY = 89  # FP8 tensor cores: Ada (sm_89) and newer
RDNA_MIN_GFX_MAJOR = 10  # gfx10xx, gfx11xx, gfx12xx: RDNA (Radeon); gfx9xx: GCN / CDNA (Instinct)

_warned: set[str] = set()


def _say_nearest(device: str, arch: Arch, note: str = "") -> None:
    """Once per device kind, on the "fused_mlp" logger: it is tuned as a checked architecture it is not."""
    if device not in _warned:
        _warned.add(device)
        LOG.warning("%s is not a checked architecture; it is tuned and pruned as %s (%s), the nearest checked one%s",
                    device, arch.name, arch.devices, note)


def cuda_arch(capability: int) -> Arch:
    """The checked architecture a CUDA device of this capability (e.g. 86, 100) follows: its own,
    else the newest checked one not newer than it (sm_86 and sm_89 follow sm_80, sm_103 sm_100,
    sm_121 sm_120), else the oldest."""
    own = [a for a in ARCHS.values() if a.capability == capability]
    if own:
        return own[0]
    cuda = sorted((a for a in ARCHS.values() if a.vendor == "nvidia"), key=lambda a: a.capability)
    older = [a for a in cuda if a.capability < capability]
    arch = older[-1] if older else cuda[0]
    _say_nearest(f"sm_{capability}", arch)
    # FP8 tensor cores are the device's own, not the followed arch's: an sm_89 follows sm_80's
    # tuning and runs W8A8, an sm_75 follows sm_80 and has none.
    return dataclasses.replace(arch, fp8_format="e4m3fn" if capability >= FP8_MIN_CAPABILITY else None)


def _gfx_version(name: str) -> tuple[int, int, int]:
    """'gfx942' -> (9, 4, 2), 'gfx90a' -> (9, 0, 10), 'gfx1100' -> (11, 0, 0): major, minor, stepping (hex)."""
    found = re.fullmatch(r"gfx(\d+)([0-9a-f])([0-9a-f])", name)
    if found is None:
        raise ValueError(f"{name!r} is not an AMD gfx architecture name (e.g. 'gfx942')")
    return int(found.group(1)), int(found.group(2), 16), int(found.group(3), 16)


def rocm_arch(gcn_arch_name: str) -> Arch:
    """The checked architecture an AMD device follows, by its gfx name as ROCm reports it
    (torch's gcnArchName, e.g. 'gfx942:sramecc+:xnack-'), never by the capability ROCm reports
    (9.4 on MI300, which would read as Hopper). Unknown: the newest checked one not newer, else the oldest."""
    name = gcn_arch_name.split(":", 1)[0].strip()
    if name in ARCHS and ARCHS[name].vendor == "amd":
        return ARCHS[name]
    version = _gfx_version(name)
    amd = sorted((a for a in ARCHS.values() if a.vendor == "amd"), key=lambda a: _gfx_version(a.name))
    older = [a for a in amd if _gfx_version(a.name) < version]
    arch = older[-1] if older else amd[0]
    # Nothing of the device's FP8 is known (MI250's gfx90a has none): it gets no FP8. An RDNA
    # device (gfx10+: wave32, WMMA) has no MFMA, so it gets none of the MFMA knobs (ops._tuning.for_arch).
    rdna = version[0] >= RDNA_MIN_GFX_MAJOR
    _say_nearest(name, arch, "; RDNA (wave32, no MFMA): without the MFMA knobs, pruned by its own LDS" if rdna else "")
    return dataclasses.replace(arch, fp8_format=None, tensor_core_op="wmma" if rdna else arch.tensor_core_op)


def w8a8_missing(arch: Arch, operand_format: str | None = None) -> str | None:
    """Why W8A8 (e4m3 x and W, an e4m3 dot) does not run on `arch`, or None; with
    `operand_format` ("e4m3fn", "e4m3fnuz"), also when the operands are not in the arch's own
    format: Triton would compile that dot through fp16 MMAs (emulated), not an FP8 one."""
    if arch.fp8_format is None:
        return f"{arch.name} has no FP8 tensor cores"
    if operand_format is not None and operand_format != arch.fp8_format:
        return (f"{arch.name}'s FP8 tensor cores take {arch.fp8_format}, the operands are {operand_format} "
                f"(Triton would run that dot through fp16 MMAs, emulated): quantize with "
                f"fp8_dtype=fused_mlp.native_fp8_dtype(device)")
    return None


def device_arch(device) -> Arch:
    """The checked architecture the GPU behind a torch device follows (ROCm builds: by gfx name),
    with the device's own FP8 tensor cores (cuda_arch, rocm_arch)."""
    import torch

    if torch.version.hip:
        return rocm_arch(torch.cuda.get_device_properties(device).gcnArchName)
    major, minor = torch.cuda.get_device_capability(device)
    return cuda_arch(10 * major + minor)

