"""The CUDA backend: CUDA C++ kernels (mcl.backends.cuda.dialect) with `#line` directives
to the MCPL lines (the dialect's `line_directive`, written by the emitter from each
statement's span), compiled by NVRTC to a cubin for the device's architecture
(mcl.backends.cuda.nvrtc) and run through NVIDIA's driver API (mcl.backends.cuda.runner;
the extra `mcl[cuda]`), a C++ host harness on the driver API and NVRTC
(mcl.backends.cuda.host). Leaves: those with a `<leaf>.cuda.toml`, which may name the
leaf's architecture (`arch = "sm_90"`).

Importing this package imports neither NVIDIA's bindings nor the runner nor code
generation: `backend` (mcl.backends.cuda.plugin) is made when the registry first asks
for it, so a light module of the package (the register count of the feedback,
mcl.backends.cuda.registers) loads alone.
"""

from __future__ import annotations

from typing import Any

from mcl.backends.cuda.words import BARRIERS, NAME, ROLES, SPACES, arch_problem

__all__ = ["BARRIERS", "NAME", "ROLES", "SPACES", "arch_problem"]


def __getattr__(name: str) -> Any:
    """`backend` and `CudaBackend`, from mcl.backends.cuda.plugin on first use."""
    if name in ("backend", "CudaBackend"):
        from mcl.backends.cuda import plugin

        return getattr(plugin, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
