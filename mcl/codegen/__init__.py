"""Code generation from leaf levels (the paper's sections 4.4 and 7): kernels in a
backend's language and their launch plans, emitted through the `Backend` protocol
(mcl.codegen.backend) of the mapping's backend.

    generate_module(checked, target, library, mapping) -> GeneratedModule   kernels + plans
    emit_opencl(function, checked, target_hwd, mapping) -> str    one function's kernels

`checked` is a `CheckedProgram` (mcl.mcpl.checked): code generation reads the checker's
types and has no typer of its own. Device specifics live in data: each leaf has
`<leaf>.<backend>.toml` beside its `.hdl` (`mcl.codegen.mapping`). What needs a backend by
name (the leaf's mapping, the harness, a session to run in) is the registry's, one layer
above: `mcl.backends` (`load_mapping`, `generate_module`, `emit_harness`, `open_session`)."""

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
