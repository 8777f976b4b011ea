"""Code generation from leaf levels (the paper's sections 4.4 and 7): kernels in a
backend's language (mcl.backends: OpenCL C, CUDA C++), a host harness, and a runner.

    generate_module(checked, target, library) -> GeneratedModule   kernels + launch plans
    emit_opencl(function, checked, target_hwd, mapping) -> str     one function's kernels
    emit_harness(generated) -> Harness                             .h/.cpp/main/CMake
    run_function(generated, name, args, device=None, repeat=1)     run through pyopencl

`checked` is a `CheckedProgram` (mcl.mcpl.checked): code generation reads the checker's
types and has no typer of its own.

Device specifics live in data: each leaf has `<leaf>.<backend>.toml` beside its `.hdl`
(`mcl.codegen.mapping`). `Session`, `select_device` and `run_function` are the default
backend's (OpenCL's, mcl.backends.opencl.runner), kept here for the callers that predate
backends; others ask the backend (`mcl.backends.get_backend(name).session(...)`).
"""

from mcl.codegen.host_cpp import HarnessFiles
from mcl.codegen.mapping import OpenCLMapping
from mcl.codegen.opencl import emit_opencl, generate_module
from mcl.codegen.plan import GeneratedModule
from mcl.codegen.session import RunResult

__all__ = [
    "GeneratedModule",
    "HarnessFiles",
    "OpenCLMapping",
    "RunResult",
    "emit_opencl",
    "generate_module",
]
