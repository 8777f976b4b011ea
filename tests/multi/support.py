"""Shared by the tests of splitting: a shipped kernel's inputs and expected outputs."""

from __future__ import annotations

from functools import cache
from typing import Any

from mcl.hdl.library import default_library
from mcl.mcpl.loader import load_program
from mcl.resources import kernels_dir
from mcl.verify import expected_outputs, load_reference, make_inputs, reference_for


@cache
def library() -> Any:
    return default_library()


# Leaf kernels split in the tests, at sizes that divide none of their tiles (matmul's
# 128 rows, convolution's 64, Black-Scholes' 1024 options per block).
CASES = {
    "matmul": ("matmul/hopper_v1.mcpl", {"n": 300, "m": 70, "p": 21}),
    "convolution": ("convolution/hopper_v1.mcpl", {"h": 301, "w": 77}),
    "histogram": ("histogram/hopper_v1.mcpl", {"h": 301, "w": 77}),
    "blackscholes": ("blackscholes/hopper_v1.mcpl", {"n": 30001}),
}


def case(name: str) -> tuple[Any, Any, dict[str, int], dict[str, Any], dict[str, Any], str]:
    """(program, reference, sizes, inputs, expected outputs, path) of a case."""
    relative, sizes = CASES[name]
    path = kernels_dir() / relative
    reference = load_reference(reference_for(path))
    sizes, inputs = make_inputs(reference, sizes, 0, None)
    return (load_program(path, library=library()), reference, sizes, inputs,
            expected_outputs(reference, inputs), str(path))


def slow_down(seconds: float) -> None:
    """In a Dask worker (`Client.run`): make every run of a range on this worker sleep
    `seconds` first, as a device busy with other work would; 0 undoes it."""
    import time

    from mcl.backends.opencl import runner

    run = getattr(runner.OpenCLSession, "unslowed_run", runner.OpenCLSession.run)
    runner.OpenCLSession.unslowed_run = run  # type: ignore[attr-defined]

    def slowed(self: Any, *args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)
        return run(self, *args, **kwargs)

    runner.OpenCLSession.run = slowed if seconds else run  # type: ignore[method-assign]
