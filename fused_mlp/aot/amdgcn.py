"""What an AMD compile costs, read from the AMDGCN assembly Triton keeps (compiled.asm["amdgcn"]):
the kernel descriptor's metadata (registers, spills, LDS) and the MFMA instructions in the code."""

from __future__ import annotations

import re
from collections import Counter

# The metadata block (amdhsa.kernels, YAML) spells them "  - .agpr_count: 0", "    .vgpr_count: 110".
_FIELDS = ("vgpr_count", "sgpr_count", "agpr_count", "vgpr_spill_count", "sgpr_spill_count",
           "group_segment_fixed_size", "private_segment_fixed_size")
_MFMA = re.compile(r"^\s+(v_mfma_\w+)", re.MULTILINE)
# an instruction line: indented, a mnemonic (v_, s_, ds_, buffer_, global_, ...), not a directive or label
_INSTRUCTION = re.compile(r"^\s+[a-z][a-z0-9_]*_[a-z0-9_]+(\s|$)", re.MULTILINE)
SPILL_BYTES_PER_REGISTER = 4  # a VGPR or SGPR holds 32 bits


def read_amdgcn(text: str) -> dict:
    """The metadata fields (each an int), the MFMA instruction names with their counts and the
    instruction count. A field the text lacks raises: a changed format must not read as zero."""
    found = {}
    for name in _FIELDS:
        match = re.search(rf"^[\s-]*\.{name}:\s+(\d+)", text, re.MULTILINE)
        if match is None:
            raise RuntimeError(f"the AMDGCN metadata has no .{name}: has Triton's output changed?")
        found[name] = int(match.group(1))
    code = text.split(".amdgpu_metadata", 1)[0]
    found["mfma"] = dict(Counter(_MFMA.findall(code)))
    found["instructions"] = len(_INSTRUCTION.findall(code))
    return found
