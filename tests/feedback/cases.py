"""The shipped kernels as feedback test cases: every `kernels/<app>/*.mcpl`, at its own
level and, for the portable `perfect` versions, translated down the hierarchy."""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcl.hdl.library import default_library
from mcl.mcpl.loader import load_program
from mcl.resources import kernels_dir

# Levels the portable versions are translated to: a host (accelerator), a split into
# blocks x threads (gpu), threads x vectors (mic) and blocks x warps x threads (fermi).
TRANSLATED_LEVELS = ("accelerator", "gpu", "mic", "fermi")


@dataclass(frozen=True)
class Case:
    path: Path
    level: str | None  # None: the function's own level

    @property
    def id(self) -> str:
        return f"{self.path.parent.name}/{self.path.stem}@{self.level or 'own'}"


def kernel_files() -> list[Path]:
    return sorted(kernels_dir().glob("*/*.mcpl"))


def cases() -> list[Case]:
    out = []
    for path in kernel_files():
        out.append(Case(path, None))
        if path.stem == "perfect":
            out += [Case(path, level) for level in TRANSLATED_LEVELS]
    return out


@functools.cache
def reference(app_dir: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"ref_{app_dir.name}", app_dir / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def load(case: Case) -> tuple[Any, Any, Any]:
    """(program, function, hwd) of a case, translated where it asks for a level."""
    library = default_library()
    program = load_program(case.path, library=library)
    name = reference(case.path.parent).FUNCTION
    if case.level is not None:
        from mcl.translate import translate_program

        program = translate_program(program, case.level, library).program
    function = program.main.function(name)
    assert function is not None, f"{case.path} has no function {name}"
    return program, function, library.get(function.hwd)
