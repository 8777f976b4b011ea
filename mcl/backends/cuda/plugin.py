"""The CUDA backend's object for the registry (mcl.backends): what `mcl.backends.cuda`
gives as `backend` when first asked (its package imports none of code generation, so
that the backend's light modules, such as the register count, load alone)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcl.backends.cuda.dialect import CUDA
from mcl.backends.cuda.words import BARRIERS, NAME, ROLES, SPACES, arch_problem
from mcl.codegen.backend import DeviceListing, MappingVocabulary, TunerTarget

if TYPE_CHECKING:
    from mcl.codegen.backend import Harness, Session
    from mcl.codegen.mapping import OpenCLMapping
    from mcl.codegen.opencl import CodegenInput
    from mcl.codegen.plan import GeneratedModule
    from mcl.diagnostics import Diagnostic
    from mcl.hdl.model import HardwareDescription


class CudaBackend:
    name = NAME
    title = "CUDA"
    dialect = CUDA
    vocabulary = MappingVocabulary(ROLES, SPACES, BARRIERS, arch=arch_problem)
    help = ("cuda (generated CUDA through NVIDIA's driver API, NVIDIA leaves only; needs "
            "mcl[cuda]); with cuda, --device is a CUDA device number or name")
    profiler = "ncu"  # Nsight Compute (mcl.profile.ncu)

    def supports(self, hwd: HardwareDescription) -> bool:
        from mcl.codegen.mapping import mapping_path

        return mapping_path(hwd, self.name).is_file()

    def emit(self, source: CodegenInput, hwd: HardwareDescription, mapping: OpenCLMapping,
             only: set[str] | None = None) -> GeneratedModule:
        from mcl.codegen.opencl import ModuleEmitter

        return ModuleEmitter(source, hwd, mapping).emit(only)

    def check_source(self, generated: GeneratedModule, source_file: str | None
                     ) -> list[Diagnostic]:
        return []  # NVRTC has no bracket-nesting limit that MCPL reaches first

    def select_device(self, spec: str | None, preferred_type: str | None = None) -> Any:
        from mcl.backends.cuda.runner import select_cuda_device

        return select_cuda_device(spec)

    def describe(self, device: Any) -> str:
        return f"{device.name.strip()} ({device.platform.name.strip()})"

    def devices(self) -> list[DeviceListing]:
        from mcl.backends.cuda.runner import list_cuda_devices

        return [DeviceListing((str(d.ordinal),), "gpu", d.name, d.platform.name, (d.arch,),
                              d.ordinal == 0, ("N",))
                for d in list_cuda_devices()]

    def device_kind(self, device: Any) -> str:
        return "gpu"

    def device_errors(self) -> tuple[type[BaseException], ...]:
        return ()  # the runner reports the driver's refusals as MclError (cuda-driver)

    def compile(self, generated: GeneratedModule, device: Any,
                options: tuple[str, ...] = ()) -> Any:
        from mcl.backends.cuda.nvrtc import compile_module

        return compile_module(generated, device.arch, options)

    def session(self, generated: GeneratedModule, device: Any = None,
                options: tuple[str, ...] = (), queue: Any = None) -> Session:
        from mcl.backends.cuda.runner import CudaSession

        return CudaSession(generated, device, options)

    def tuner_target(self, device: Any) -> TunerTarget:
        # Kernel Tuner's cuda-python backend compiles to PTX with the NVRTC it finds: one
        # newer than the driver makes PTX the driver refuses (docs/tuning.md).
        return TunerTarget("nvcuda", 0, device.ordinal)

    def harness(self, generated: GeneratedModule) -> Harness:
        from mcl.backends.cuda.host import CUDA_HOST
        from mcl.codegen.host_cpp import cpp_harness

        return cpp_harness(generated, CUDA_HOST)


backend = CudaBackend()
