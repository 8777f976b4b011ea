"""Shared helpers of the OpenMP backend's tests: generate C for a leaf and run it through
the backend, and run a shipped kernel against its numpy reference as `mcl run --verify`
does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mcl import pipeline
from mcl.backends.openmp import backend
from mcl.codegen.plan import GeneratedModule
from mcl.hdl.library import default_library
from mcl.resources import kernels_dir
from mcl.verify import OutputCheck, expected_outputs, load_reference, make_inputs, verify

LIBRARY = default_library()


def generate(program: Any, target: str = "x86_avx512") -> GeneratedModule:
    return pipeline.generate(pipeline.checked(program, LIBRARY), target, LIBRARY,
                             language="openmp")


def run(generated: GeneratedModule, function: str, args: dict[str, Any]
        ) -> dict[str, np.ndarray]:
    return backend.session(generated).run(function, args).outputs


def cpu_versions() -> list[tuple[Path, str]]:
    """(file, leaf) of every shipped version written at a CPU leaf."""
    return [(path, leaf) for leaf in ("x86_avx512", "xeon_phi")
            for path in sorted(kernels_dir().glob(f"*/{leaf}_v*.mcpl"))]


def verify_kernel(path: Path, target: str, sizes: dict[str, int] | None = None
                  ) -> list[OutputCheck]:
    """Run the kernel at `path` through the OpenMP backend on its reference's inputs
    (sizes changed by `sizes`) and compare every output with the reference."""
    reference = load_reference(path.parent / "reference.py")
    checked = pipeline.checked_at(path, [], LIBRARY)
    run_sizes, args = make_inputs(reference, sizes or {}, 0)
    expected = expected_outputs(reference, args)
    generated = generate(checked, target)
    outputs = backend.session(generated).run(reference.function, args).outputs
    return verify(reference, expected, outputs, run_sizes)
