"""Compile generated CUDA with NVRTC (`cuda-bindings` and `nvidia-cuda-nvrtc` from PyPI,
the extra `mcl[cuda]`): no CUDA toolkit and no GPU needed.

The result is machine code (a cubin) for one architecture, never PTX: a driver loads a
cubin of its architecture whatever NVRTC version built it, while PTX from an NVRTC newer
than the driver is refused (CUDA_ERROR_UNSUPPORTED_PTX_VERSION). So `mcl run --backend
cuda` compiles for the compute capability of the device it runs on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcl.diagnostics import MclError, error

if TYPE_CHECKING:
    from mcl.codegen.plan import GeneratedModule

# Warnings are errors: generated code that makes NVRTC warn is a bug of the generator.
WARNINGS_AS_ERRORS = "-Werror=all-warnings"


def nvrtc_module() -> Any:
    """`cuda.bindings.nvrtc`, or a one-line error that names the missing packages."""
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        raise MclError(
            error(
                "cuda-missing",
                "the CUDA backend needs NVIDIA's Python bindings and NVRTC, which are not "
                "installed",
                hint="pip install 'mcl[cuda]' (cuda-bindings and nvidia-cuda-nvrtc)",
            )
        ) from None
    return nvrtc


@dataclass(frozen=True)
class Compiled:
    cubin: bytes
    log: str
    arch: str


def supported_archs() -> list[int]:
    """The compute capabilities (e.g. 90 for sm_90) this NVRTC can compile for."""
    nvrtc = nvrtc_module()
    result, archs = nvrtc.nvrtcGetSupportedArchs()
    _check(nvrtc, result, "nvrtcGetSupportedArchs")
    return [int(a) for a in archs]


def version() -> str:
    nvrtc = nvrtc_module()
    result, major, minor = nvrtc.nvrtcVersion()
    _check(nvrtc, result, "nvrtcVersion")
    return f"{major}.{minor}"


def check_arch(arch: str, where: str) -> int:
    """The number of architecture `arch` ("sm_90"), or a one-line error if this NVRTC
    cannot compile for it (`where` names who asked for it)."""
    number = int(arch.removeprefix("sm_")) if arch.removeprefix("sm_").isdigit() else -1
    archs = supported_archs()
    if number not in archs:
        raise MclError(
            error(
                "cuda-arch",
                f"{where} needs architecture {arch}, which NVRTC {version()} does not "
                f"support (it compiles for sm_{archs[0]} to sm_{archs[-1]})",
                hint="run on a supported device, or install an NVRTC of another CUDA "
                "version (nvidia-cuda-nvrtc)",
            )
        )
    return number


def compile_cuda(
    source: str,
    name: str,
    arch: str,
    options: tuple[str, ...] = (),
    warnings_as_errors: bool = False,
) -> Compiled:
    """The cubin of CUDA `source` (file name `name` in messages) for `arch` ("sm_90");
    `options` add -D definitions. A compile error is an MclError with NVRTC's log."""
    nvrtc = nvrtc_module()
    check_arch(arch, name)
    result, program = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    _check(nvrtc, result, "nvrtcCreateProgram")
    try:
        flags = [f"--gpu-architecture={arch}", "--std=c++17", *options]
        if warnings_as_errors:
            flags.append(WARNINGS_AS_ERRORS)
        (result,) = nvrtc.nvrtcCompileProgram(program, len(flags), [f.encode() for f in flags])
        log = _log(nvrtc, program)
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise MclError(
                error(
                    "cuda-build",
                    f"NVRTC {version()} rejected the generated CUDA of {name} for {arch}:\n"
                    + log.strip(),
                    hint="this is a bug in mcl's code generation; please report it",
                )
            )
        result, size = nvrtc.nvrtcGetCUBINSize(program)
        _check(nvrtc, result, "nvrtcGetCUBINSize")
        cubin = b" " * size
        (result,) = nvrtc.nvrtcGetCUBIN(program, cubin)
        _check(nvrtc, result, "nvrtcGetCUBIN")
        return Compiled(cubin, log, arch)
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def _log(nvrtc: Any, handle: Any) -> str:
    """The compile log of NVRTC program `handle`."""
    result, size = nvrtc.nvrtcGetProgramLogSize(handle)
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS or size <= 1:
        return ""
    buffer = b" " * size
    nvrtc.nvrtcGetProgramLog(handle, buffer)
    return buffer.rstrip(b"\0").decode(errors="replace")


def _check(nvrtc: Any, result: Any, call: str) -> None:
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise MclError(error("cuda-nvrtc", f"{call} failed: {result.name}"))


def compile_module(generated: GeneratedModule, arch: str, options: tuple[str, ...] = ()
                   ) -> Compiled:
    """The CUDA module `generated` compiled for `arch`, with line information (no cost at
    run time): compute-sanitizer and Nsight Compute name the MCPL lines of the #line
    directives."""
    return compile_cuda(generated.source, f"{generated.name}.cu", arch,
                        ("--generate-line-info", *options))
