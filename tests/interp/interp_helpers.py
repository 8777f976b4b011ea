"""Helpers shared by the interpreter tests (a plain module: imported by name because the
test folders are not packages)."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from mcl import pipeline
from mcl.diagnostics import Diagnostic, MclError
from mcl.hdl.library import HwdLibrary, default_library
from mcl.interp import run_function
from mcl.mcpl.ast import Module
from mcl.mcpl.parse import parse_source

FILE = "kernel.mcpl"


@cache
def library() -> HwdLibrary:
    return default_library()


def parse(source: str) -> Module:
    return parse_source(source, file=FILE)


def run(source: str, name: str, args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """Run `name` from `source`, checked by the pipeline, with the bundled hardware
    descriptions."""
    checked = pipeline.check(parse(source), library())
    return run_function(checked, name, args, kw.pop("library", library()), **kw)


def run_error(source: str, name: str, args: dict[str, Any], **kw: Any) -> Diagnostic:
    """The single diagnostic of a run that must fail."""
    with pytest.raises(MclError) as exc:
        run(source, name, args, **kw)
    assert len(exc.value.diagnostics) == 1
    return exc.value.diagnostics[0]


def position(source: str, needle: str, occurrence: int = 1) -> tuple[int, int]:
    """(line, column), 1-based, of the n-th occurrence of `needle` in `source`."""
    start = -1
    for _ in range(occurrence):
        start = source.index(needle, start + 1)
    line = source.count("\n", 0, start) + 1
    column = start - (source.rfind("\n", 0, start) + 1) + 1
    return line, column
