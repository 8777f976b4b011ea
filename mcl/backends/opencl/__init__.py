"""The OpenCL backend: OpenCL C kernels (mcl.backends.opencl.dialect), run through pyopencl
on any OpenCL device (mcl.backends.opencl.runner; by default the CPU device of the PoCL that
comes with mcl, mcl.backends.opencl.bundled_pocl), a C++ host harness on the OpenCL C API
(mcl.backends.opencl.host). Leaves: those with a `<leaf>.opencl.toml`, or the original
MCL's `codegen/<leaf>.lisp` (mcl.codegen.lisp_mapping).

Importing this module imports neither pyopencl nor the runner: the registry imports it to
generate code, which needs no device.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcl.backends.opencl.dialect import OPENCL
from mcl.codegen.backend import DeviceListing, DeviceSlot, MappingVocabulary, TunerTarget
from mcl.codegen.mapping import ADDRESS_SPACES, BARRIERS, ROLES

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mcl.codegen.backend import Harness, Session
    from mcl.codegen.mapping import OpenCLMapping
    from mcl.codegen.opencl import CodegenInput
    from mcl.codegen.plan import GeneratedModule
    from mcl.diagnostics import Diagnostic
    from mcl.hdl.model import HardwareDescription

NAME = "opencl"


def _lisp_mapping(hwd: HardwareDescription) -> tuple[dict, str] | None:
    """The mapping data of the original MCL's codegen/<leaf>.lisp, where there is one."""
    from mcl.codegen.lisp_mapping import lisp_path, load_lisp_mapping

    original = lisp_path(hwd)
    return None if original is None else (load_lisp_mapping(original, hwd), str(original))


class OpenCLBackend:
    name = NAME
    title = "OpenCL"
    dialect = OPENCL
    vocabulary = MappingVocabulary(
        {r: r for r in ROLES}, {a: a for a in ADDRESS_SPACES}, {b: b for b in BARRIERS},
        lanes=True, fallback=_lisp_mapping,
        fallback_hint=" (or the original MCL's codegen/<name>.lisp beside their folder)")
    help = "opencl (default: pyopencl, any OpenCL device)"
    profiler = None

    def supports(self, hwd: HardwareDescription) -> bool:
        from mcl.codegen.lisp_mapping import lisp_path
        from mcl.codegen.mapping import mapping_path

        return mapping_path(hwd, self.name).is_file() or lisp_path(hwd) is not None

    def emit(self, source: CodegenInput, hwd: HardwareDescription, mapping: OpenCLMapping,
             only: set[str] | None = None) -> GeneratedModule:
        from mcl.codegen.opencl import ModuleEmitter

        return ModuleEmitter(source, hwd, mapping).emit(only)

    def check_source(self, generated: GeneratedModule, source_file: str | None
                     ) -> list[Diagnostic]:
        # clang, which most OpenCL compilers are built on, stops at 256 nested brackets.
        from mcl.codegen.bracket_depth import nesting_errors

        return nesting_errors(generated.nesting, generated.name)

    def select_device(self, spec: str | None, preferred_type: str | None = None) -> Any:
        from mcl.backends.opencl.runner import select_device

        return select_device(spec, preferred_type)

    def describe(self, device: Any) -> str:
        from mcl.backends.opencl.runner import describe

        return describe(device)

    def devices(self) -> list[DeviceListing]:
        from mcl.backends.opencl.bundled_pocl import bundled_platform_handles
        from mcl.backends.opencl.runner import list_devices, select_device

        found = list_devices()
        if not found:
            return []
        chosen = select_device()
        bundled = bundled_platform_handles()
        return [DeviceListing((str(info.index), f"{info.platform_index}:{info.device_index}"),
                              info.kind, info.name, info.platform,
                              ("bundled with mcl",) if device.platform.int_ptr in bundled
                              else (), device == chosen, ("N", "P:D"))
                for info, device in found]

    def device_kind(self, device: Any) -> str:
        from mcl.backends.opencl.runner import device_kind

        return device_kind(device.type)

    def device_errors(self) -> tuple[type[BaseException], ...]:
        import pyopencl as cl

        return (cl.Error,)

    def worker_slots(self, specs: Sequence[str] | None, preferred_type: str | None
                     ) -> list[DeviceSlot]:
        from mcl.backends.opencl.workers import worker_slots

        return worker_slots(specs, preferred_type)

    def hold_device(self, device: Any) -> Any:
        from mcl.backends.opencl.workers import hold_device

        return hold_device(device)

    def compile(self, generated: GeneratedModule, device: Any,
                options: tuple[str, ...] = ()) -> Any:
        import pyopencl as cl

        from mcl.backends.opencl.runner import build_program

        return build_program(cl.Context([device]), device, generated, options)

    def session(self, generated: GeneratedModule, device: Any = None,
                options: tuple[str, ...] = (), queue: Any = None) -> Session:
        from mcl.backends.opencl.runner import OpenCLSession

        return OpenCLSession(generated, device, options, queue)

    def tuner_target(self, device: Any) -> TunerTarget:
        from mcl.backends.opencl.runner import list_devices

        for info, d in list_devices():
            if d == device:
                return TunerTarget("OpenCL", info.platform_index, info.device_index)
        return TunerTarget("OpenCL")

    def harness(self, generated: GeneratedModule) -> Harness:
        from mcl.backends.opencl.host import OPENCL_HOST
        from mcl.codegen.host_cpp import cpp_harness

        return cpp_harness(generated, OPENCL_HOST)


backend = OpenCLBackend()
