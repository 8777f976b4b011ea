"""Shared helpers of the code generation tests: load MCPL written in a test, generate
OpenCL for a leaf (optionally with a custom mapping) and run it on the PoCL device."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from mcl import pipeline
from mcl.backends import parse_mapping
from mcl.backends.opencl.runner import OpenCLSession
from mcl.codegen import GeneratedModule
from mcl.codegen.mapping import toml_module
from mcl.hdl.library import default_library
from mcl.mcpl.checked import CheckedProgram
from mcl.mcpl.loader import Program, load_program
from mcl.resources import kernels_dir

tomllib = toml_module()

LEAVES = ("fermi", "hopper", "xeon_phi", "x86_avx512")


@cache
def library() -> Any:
    return default_library()


def load(tmp_path: Path, source: str, name: str = "kernel.mcpl") -> CheckedProgram:
    """Write `source` to a file, load and check it (the test kernels must pass the
    checker): code generation reads the checker's types, as `mcl codegen` does."""
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    checked = pipeline.check(load_program(path, library=library()), library())
    assert not checked.errors, "\n".join(str(d) for d in checked.errors)
    return checked


def generate(program: CheckedProgram | Program, target: str,
             mapping_toml: str | None = None) -> GeneratedModule:
    mapping = None
    if mapping_toml is not None:
        hwd = library().get(target)
        mapping = parse_mapping(tomllib.loads(mapping_toml), f"{target}.test.toml", hwd)
    return pipeline.generate(pipeline.checked(program, library()), target, library(), mapping)


def run(generated: GeneratedModule, function: str, args: dict[str, Any]) -> dict[str, np.ndarray]:
    return OpenCLSession(generated).run(function, args).outputs


def kernel_folders() -> list[Path]:
    return sorted(p for p in kernels_dir().iterdir() if (p / "reference.py").is_file())


def versions_at_leaves(language: str) -> list[tuple[Path, str]]:
    """(kernel file, leaf) for every shipped version (`kernels/*/*.mcpl`, so new series
    are picked up) at every leaf it can be translated to that has a `language` mapping
    (`<leaf>.<language>.toml`): the leaf itself for a version written for it, the leaves
    below the level of one written higher up."""
    from mcl.codegen.mapping import mapping_path
    from mcl.translate.levels import descendants

    lib = library()
    leaves = [n for n in lib.leaves() if mapping_path(lib.get(n), language).is_file()]
    out = []
    for folder in kernel_folders():
        for path in sorted(folder.glob("*.mcpl")):
            program = load_program(path, library=lib)
            levels = {f.hwd for f in program.main.functions if f.hwd in lib.names()}
            for level in sorted(levels):
                reach = [level, *descendants(lib, level)]
                out += [(path, leaf) for leaf in leaves if leaf in reach]
    return sorted(set(out))
