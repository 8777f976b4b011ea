"""Shared helpers for the feedback tests: load a kernel (optionally translated) and run
the feedback engine on it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # brute.py, oracle.py, cases.py

from mcl import pipeline
from mcl.feedback.messages import Message  # noqa: E402
from mcl.feedback.registry import analyse  # noqa: E402
from mcl.hdl.library import default_library  # noqa: E402
from mcl.mcpl.loader import load_program  # noqa: E402
from mcl.mcpl.parse import parse_source  # noqa: E402
from mcl.resources import kernels_dir  # noqa: E402

KERNELS = kernels_dir()


@pytest.fixture(scope="session")
def library() -> Any:
    return default_library()


def load_kernel(path: str | Path, level: str | None = None) -> tuple[Any, Any]:
    """(program, library) for a kernel file, translated to `level` when given."""
    library = default_library()
    program = load_program(Path(path), library=library)
    if level is not None:
        from mcl.translate import translate_program

        program = translate_program(program, level, library).program
    return program, library


def feedback(path: str | Path, level: str | None = None, function: str | None = None,
             values: dict[str, Any] | None = None) -> list[Message]:
    program, library = load_kernel(path, level)
    f = program.main.function(function) if function else program.main.functions[-1]
    return analyse(f, pipeline.check(program, library), library.get(f.hwd), values or {})


def feedback_source(text: str, level: str = "perfect", values: dict[str, Any] | None = None
                    ) -> list[Message]:
    """Feedback on the last function of an MCPL source text (a lone module)."""
    module = parse_source(text)
    f = module.functions[-1]
    library = default_library()
    return analyse(f, pipeline.check(module, library), library.get(level), values or {})


def by_code(messages: list[Message], code: str) -> list[Message]:
    return [m for m in messages if m.code == code]
