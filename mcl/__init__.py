"""mcl — Many-Core Levels: stepwise refinement for performance.

The package follows docs/architecture.md: `mcl.hdl` reads hardware descriptions,
`mcl.mcpl` is the kernel-language front end, `mcl.translate` moves kernels between levels
(the paper's Appendix A), `mcl.feedback` analyses them, `mcl.codegen` emits OpenCL/C++.
"""

from typing import Any

__version__ = "0.1.0"


def exported(package: str, exports: dict[str, str], name: str) -> Any:
    """Attribute `name` of `package`, which exports it lazily from the module `exports`
    names for it (PEP 562's module `__getattr__`): a subpackage whose import would
    otherwise pull in SymPy or numpy for callers that use none of it."""
    if name in exports:
        import importlib

        return getattr(importlib.import_module(exports[name]), name)
    raise AttributeError(f"module {package!r} has no attribute {name!r}")
