"""An MCPL module at a CPU leaf -> C with OpenMP: the shared emitter
(mcl.codegen.opencl.ModuleEmitter) with C's spellings (dialect.py) and C kernels
(kernels.py); then the few words C spells otherwise than OpenCL C in the statements
(`#pragma unroll`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from mcl.backends import load_mapping
from mcl.backends.openmp.dialect import DEVICE_TYPES, LANGUAGE
from mcl.backends.openmp.kernels import OpenMPKernelEmitter
from mcl.codegen.mapping import OpenCLMapping
from mcl.codegen.opencl import CodegenInput, ModuleEmitter
from mcl.codegen.plan import GeneratedModule
from mcl.diagnostics import MclError, error

if TYPE_CHECKING:
    from mcl.hdl.model import HardwareDescription

# OpenCL's `#pragma unroll  // N steps` (statements.py).
_UNROLL = re.compile(r"^(\s*)#pragma unroll  // (\d+) steps$")


class OpenMPModuleEmitter(ModuleEmitter):
    """The shared module emitter with C functions for kernels."""

    kernel_emitter = OpenMPKernelEmitter


def finish_source(text: str) -> str:
    """The kernel file from the emitter's text: OpenCL's `#pragma unroll` as GCC's and
    Clang's `#pragma GCC unroll`, kept only on loops with no loop inside. Unrolling a loop
    around loops (matmul x86_avx512_v4's 16 register tiles) makes GCC keep the arrays of
    the inner loops on the stack instead of in registers (measured: the micro-kernel's 24
    vector sums were loaded and stored at every step, 2.5x slower); the C compiler
    unrolls such loops itself where it pays."""
    lines = text.split("\n")
    out = []
    for k, line in enumerate(lines):
        found = _UNROLL.match(line)
        if found is None:
            out.append(line)
        elif _innermost(lines, k + 1, len(found.group(1))):
            out.append(f"{found.group(1)}#pragma GCC unroll {found.group(2)}")
    return "\n".join(out)


def _innermost(lines: list[str], start: int, indent: int) -> bool:
    """Whether the loop at `lines[start]` (its header at `indent` columns, its body
    deeper, its closing brace at `indent`: statements.py's layout) holds no loop."""
    for line in lines[start + 1:]:
        stripped = line.lstrip()
        if len(line) - len(stripped) <= indent and stripped.startswith("}"):
            return True
        if stripped.startswith("for ("):
            return False
    return True


def require_cpu_leaf(hwd: HardwareDescription, mapping: OpenCLMapping) -> None:
    """An error for a leaf that is no CPU."""
    if mapping.device_type not in DEVICE_TYPES:
        raise MclError(error(
            "codegen-openmp-leaf",
            f"'{hwd.name}' is a {mapping.device_type} leaf ({Path(mapping.file).name}); the "
            "OpenMP backend generates C for CPU leaves (device_type "
            + " or ".join(DEVICE_TYPES) + ")",
            hint="generate OpenCL or CUDA for it (--backend opencl / cuda), or pick a CPU "
            "leaf such as x86_avx512"))


def supports(hwd: HardwareDescription) -> bool:
    try:
        require_cpu_leaf(hwd, load_mapping(hwd, language=LANGUAGE))
    except MclError:
        return False
    return True


def emit(source: CodegenInput, hwd: HardwareDescription, mapping: OpenCLMapping,
         only: set[str] | None = None) -> GeneratedModule:
    """C source and launch plans of the kernel functions of `source` at CPU leaf `hwd`."""
    require_cpu_leaf(hwd, mapping)
    return OpenMPModuleEmitter(source, hwd, mapping).emit(only)

