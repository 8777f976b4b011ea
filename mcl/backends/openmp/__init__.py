"""The OpenMP backend: C with OpenMP and vector types for CPU leaves, compiled by the
system's C compiler and run in this process (docs/codegen.md, "OpenMP").

    mcl run FILE --target x86_avx512 --backend openmp --verify
    mcl codegen FILE --target x86_avx512 --lang openmp -o DIR

The kernels come from the shared emitter (mcl.codegen.opencl) with C's spellings
(dialect.py), C functions whose work-groups are the iterations of an `omp parallel for`
loop (kernels.py) and lanes as GCC/Clang vector types (lanes.py). build.py compiles them
into a shared library (cached by the hash of the source), runner.py calls them through
ctypes, harness.py writes the C host program of `mcl codegen`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcl.backends.openmp.dialect import LANGUAGE, OPENMP, opencl_mapping_data
from mcl.codegen.backend import DeviceListing, MappingVocabulary, TunerTarget
from mcl.codegen.mapping import ADDRESS_SPACES, BARRIERS, ROLES
from mcl.diagnostics import MclError, error

if TYPE_CHECKING:
    from mcl.backends.openmp.harness import CHarness
    from mcl.backends.openmp.runner import OpenMPSession
    from mcl.codegen.mapping import OpenCLMapping
    from mcl.codegen.opencl import CodegenInput
    from mcl.codegen.plan import GeneratedModule
    from mcl.diagnostics import Diagnostic
    from mcl.hdl.model import HardwareDescription

# The one device: this machine's CPU. `--device` may name it so, or leave it out.
HOST_SPECS = ("host", "cpu", "0", "auto")


class HostCpu:
    """The device of the OpenMP backend: the CPU mcl runs on. Its memory is the host's
    (what mcl.footprint reads of a device: the host's own check comes first and is
    stricter, since the host also holds the inputs and the reference)."""

    def __init__(self) -> None:
        import os

        pages, page = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        self.global_mem_size = self.max_mem_alloc_size = pages * page

    def __str__(self) -> str:
        from mcl.backends.openmp.runner import host_device

        return host_device()


class OpenMPBackend:
    name = LANGUAGE
    title = "C with OpenMP"
    dialect = OPENMP
    # OpenCL's words: without a <leaf>.openmp.toml the backend reads the leaf's OpenCL
    # mapping (dialect.py).
    vocabulary = MappingVocabulary({r: r for r in ROLES}, {a: a for a in ADDRESS_SPACES},
                                   {b: b for b in BARRIERS}, lanes=True,
                                   fallback=opencl_mapping_data,
                                   fallback_hint=" (or a <name>.opencl.toml, which the "
                                   "OpenMP backend reads as well)")
    help = ("openmp (C with OpenMP and vector types compiled by $CC or cc, run on this "
            "CPU; CPU leaves such as x86_avx512)")
    profiler = None

    # ------------------------------------------------------------------ leaves
    def supports(self, hwd: HardwareDescription) -> bool:
        from mcl.backends.openmp.emitter import supports

        return supports(hwd)

    # ------------------------------------------------------------------ lowering stages
    def emit(self, source: CodegenInput, hwd: HardwareDescription, mapping: OpenCLMapping,
             only: set[str] | None = None) -> GeneratedModule:
        from mcl.backends.openmp.emitter import emit

        return emit(source, hwd, mapping, only)

    def check_source(self, generated: GeneratedModule, source_file: str | None
                     ) -> list[Diagnostic]:
        return []

    # ------------------------------------------------------------------ devices
    def select_device(self, spec: str | None, preferred_type: str | None = None) -> HostCpu:
        if spec is None or spec.strip().lower() in HOST_SPECS:
            return HostCpu()
        raise MclError(error(
            "run-unknown-device", f"the OpenMP backend runs on this machine's CPU only; "
            f"no device '{spec}'", hint="leave out --device, or write --device host"))

    def describe(self, device: Any) -> str:
        return str(device if device is not None else HostCpu())

    def devices(self) -> list[DeviceListing]:
        from mcl.backends.openmp.build import compiler
        from mcl.backends.openmp.runner import processor_name, threads

        return [DeviceListing(("host",), "cpu", processor_name(), f"OpenMP ({compiler()})",
                              (f"{threads()} threads",), default=True)]

    def device_kind(self, device: Any) -> str:
        return "cpu"

    def device_errors(self) -> tuple[type[BaseException], ...]:
        return ()  # the C compiler's refusals are MclError (run-build)

    # ------------------------------------------------------------------ compile and run
    def compile(self, generated: GeneratedModule, device: Any,
                options: tuple[str, ...] = ()) -> Any:
        import ctypes

        from mcl.backends.openmp.build import build_library

        return ctypes.CDLL(str(build_library(generated.source, options).path))

    def session(self, generated: GeneratedModule, device: Any = None,
                options: tuple[str, ...] = (), queue: Any = None) -> OpenMPSession:
        from mcl.backends.openmp.runner import OpenMPSession

        return OpenMPSession(generated, options)

    def tuner_target(self, device: Any) -> TunerTarget:
        raise MclError(error(
            "tune-backend", "mcl tune does not tune kernels of the OpenMP backend",
            hint="tune with --backend opencl on the same CPU (PoCL); the constants it finds "
            "are the kernel's"))

    # ------------------------------------------------------------------ host program
    def harness(self, generated: GeneratedModule) -> CHarness:
        from mcl.backends.openmp.harness import CHarness

        return CHarness(generated)


backend = OpenMPBackend()
