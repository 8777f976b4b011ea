"""An MCPL module at a CPU leaf -> C with OpenMP: the shared emitter
(mcl.codegen.opencl.ModuleEmitter) with C's spellings (dialect.py: `#pragma GCC unroll`
among them) and C kernels (kernels.py)."""

from __future__ import annotations

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

class OpenMPModuleEmitter(ModuleEmitter):
    """The shared module emitter with C functions for kernels."""

    kernel_emitter = OpenMPKernelEmitter


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

