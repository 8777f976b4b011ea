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

from __future__ import annotations

from typing import Any

from mcl import exported

# Attributes are loaded lazily: a generator imports only what it uses, and the runtime's
# modules (the session, with numpy) come only with a run (`mcl check` at hopper generates
# the CUDA code for the compiler's counts and runs nothing).
_EXPORTS = {
    "GeneratedModule": "mcl.codegen.plan",
    "HarnessFiles": "mcl.codegen.host_cpp",
    "OpenCLMapping": "mcl.codegen.mapping",
    "RunResult": "mcl.codegen.session",
    "emit_opencl": "mcl.codegen.opencl",
    "generate_module": "mcl.codegen.opencl",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    return exported(__name__, _EXPORTS, name)
