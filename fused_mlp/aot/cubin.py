"""The SASS instruction count of a cubin, read from its ELF section headers: the size of its code
(.text.<function>) sections over 16 bytes, the fixed width of an instruction on Volta and newer
(every NVIDIA arch the check knows is sm_80 or newer). The count equals the instruction lines
`cuobjdump --dump-sass` prints (tests/test_aot_cubin.py checks it), without that disassembly:
~0.5-1 s a compile, as long as ptxas itself."""

from __future__ import annotations

import struct

SASS_INSTRUCTION_BYTES = 16
_ELF64_LITTLE = b"\x7fELF\x02\x01"


def _sections(cubin: bytes) -> list[tuple[str, int]]:
    """(name, size) of every section of a 64-bit little-endian ELF."""
    if not cubin.startswith(_ELF64_LITTLE):
        raise RuntimeError(f"not a 64-bit little-endian ELF cubin: starts {cubin[:6]!r}")
    section_table, = struct.unpack_from("<Q", cubin, 0x28)
    entry_size, count, names_index = struct.unpack_from("<HHH", cubin, 0x3A)
    # Elf64_Shdr: name, type, flags, addr, offset, size, link, info, addralign, entsize
    headers = [struct.unpack_from("<IIQQQQIIQQ", cubin, section_table + i * entry_size) for i in range(count)]
    names_at = headers[names_index][4]

    def name(offset: int) -> str:
        start = names_at + offset
        return cubin[start:cubin.index(b"\0", start)].decode()

    return [(name(h[0]), h[5]) for h in headers]


def sass_instructions(cubin: bytes) -> int:
    """Instructions in the cubin's code sections; a cubin without any raises (a changed format
    must not read as zero)."""
    code = [size for name, size in _sections(cubin) if name.startswith(".text.")]
    if not code:
        raise RuntimeError("the cubin has no .text.<function> section: has its format changed?")
    return sum(code) // SASS_INSTRUCTION_BYTES
