"""Code generation from leaf levels (the paper's sections 4.4 and 7): OpenCL kernels,
a C++ host harness, and a pyopencl runner.

    generate_module(checked, target, library) -> GeneratedModule   OpenCL + launch plans
    emit_opencl(function, checked, target_hwd, mapping) -> str     one function's OpenCL

`checked` is a `CheckedProgram` (mcl.mcpl.checked): code generation reads the checker's
types and has no typer of its own.
    emit_harness(generated) -> HarnessFiles                        .h/.cpp/main/CMake
    run_function(generated, name, args, device=None, repeat=1)     run through pyopencl

Device specifics live in data: each leaf has `<leaf>.opencl.toml` beside its `.hdl`
(`mcl.codegen.mapping`).
"""

from mcl.codegen.host_cpp import HarnessFiles, emit_harness
from mcl.codegen.mapping import OpenCLMapping, load_mapping
from mcl.codegen.opencl import emit_opencl, generate_module
from mcl.codegen.plan import GeneratedModule
from mcl.codegen.runner import RunResult, Session, run_function, select_device

__all__ = [
    "GeneratedModule",
    "HarnessFiles",
    "OpenCLMapping",
    "RunResult",
    "Session",
    "emit_harness",
    "emit_opencl",
    "generate_module",
    "load_mapping",
    "run_function",
    "select_device",
]
