"""What a cubin says about its kernels: the registers per thread NVIDIA's compiler gave each.

The register count is decided by ptxas, which NVRTC runs to make a cubin
(mcl.backends.cuda.nvrtc), so it is known on a machine without a GPU. A cubin is an ELF64 file;
ptxas records each kernel's attributes in `.nv.info` sections as (format, attribute, size,
payload) entries, the register count as attribute EIATTR_REGCOUNT with the kernel's symbol
index and the count. CUDA 12 and later keep every kernel's count in the one `.nv.info`
section; older ones put it in `.nv.info.KERNEL`, without the symbol. Both are read.
"""

from __future__ import annotations

import struct

_EIATTR_REGCOUNT = 0x2F
# Entry formats: no value (EIFMT_NVAL), a byte (EIFMT_BVAL), a half word (EIFMT_HVAL),
# and a value of the size the entry states (EIFMT_SVAL).
_NVAL, _BVAL, _HVAL, _SVAL = 0x01, 0x02, 0x03, 0x04


def _sections(cubin: bytes) -> list[tuple[str, int, int]]:
    """(name, offset, size) of each section of an ELF64 little-endian file."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file (a cubin)")
    (table,) = struct.unpack_from("<Q", cubin, 0x28)
    entry_size, count, names_at = struct.unpack_from("<HHH", cubin, 0x3A)
    raw = [struct.unpack_from("<IIQQQQ", cubin, table + i * entry_size) for i in range(count)]
    names_offset = raw[names_at][4]
    return [(_string(cubin, names_offset + name), offset, size)
            for name, _type, _flags, _addr, offset, size in raw]


def _string(data: bytes, at: int) -> str:
    return data[at:data.index(b"\0", at)].decode("ascii", "replace")


def _symbols(cubin: bytes, sections: list[tuple[str, int, int]]) -> list[str]:
    found = {name: (offset, size) for name, offset, size in sections}
    if ".symtab" not in found or ".strtab" not in found:
        return []
    (table, size), (strings, _) = found[".symtab"], found[".strtab"]
    return [_string(cubin, strings + struct.unpack_from("<I", cubin, table + 24 * i)[0])
            for i in range(size // 24)]


def _entries(cubin: bytes, offset: int, size: int) -> list[tuple[int, bytes]]:
    """(attribute, payload) of each entry of a `.nv.info` section."""
    out, at, end = [], offset, offset + size
    while at + 2 <= end:
        form, attribute = cubin[at], cubin[at + 1]
        if form == _SVAL:
            (length,) = struct.unpack_from("<H", cubin, at + 2)
            out.append((attribute, cubin[at + 4:at + 4 + length]))
            at += 4 + length
        elif form == _HVAL:
            out.append((attribute, cubin[at + 2:at + 4]))
            at += 4
        elif form == _BVAL:
            at += 3
        elif form == _NVAL:
            at += 2
        else:  # padding, or a format of a later CUDA: its size is unknown, so stop here
            break
    return out


def register_counts(cubin: bytes) -> dict[str, int]:
    """Registers per thread of each kernel of `cubin`, by its (mangled) name."""
    sections = _sections(cubin)
    symbols = _symbols(cubin, sections)
    counts: dict[str, int] = {}
    for name, offset, size in sections:
        if name != ".nv.info" and not name.startswith(".nv.info."):
            continue
        for attribute, payload in _entries(cubin, offset, size):
            if attribute != _EIATTR_REGCOUNT or len(payload) != 8:
                continue
            symbol, registers = struct.unpack("<II", payload)
            if name == ".nv.info" and symbol < len(symbols):
                counts[symbols[symbol]] = registers
            elif name != ".nv.info":
                counts[name[len(".nv.info."):]] = registers
    return counts
