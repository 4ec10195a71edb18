"""Kernel names in a cubin, read from its ELF section headers. Pure (no NVIDIA tool runs).

A cubin is an ELF64 file; each kernel's code lives in a section named `.text.<kernel>`. Reading the section
name table is enough to refuse a kernel name before any disassembler runs.
"""

from __future__ import annotations

import struct

ELF_MAGIC = b"\x7fELF"


class CubinError(ValueError):
    pass


def kernel_names(data: bytes) -> list[str]:
    if data[:4] != ELF_MAGIC:
        raise CubinError(
            "not an ELF file: pass a .cubin (the compile tool's cubin artifact), not PTX or a fatbinary"
        )
    if data[4] != 2 or data[5] != 1:
        raise CubinError("not a 64-bit little-endian ELF: cubins for sm_90 are ELF64 LE")
    try:
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        sections = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
        _, _, _, _, str_off, str_size = sections[shstrndx]
        table = data[str_off : str_off + str_size]
    except (struct.error, IndexError) as e:
        raise CubinError(f"truncated or corrupt cubin ({e})") from None
    names = []
    for name_off, *_ in sections:
        end = table.find(b"\0", name_off)
        name = table[name_off : end if end >= 0 else None].decode(errors="replace")
        if name.startswith(".text."):
            names.append(name[len(".text.") :])
    return names
