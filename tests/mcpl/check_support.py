"""Helpers for the checker tests (tests/mcpl/test_check_*.py).

Broken kernels in `tests/mcpl/broken/` state the diagnostics they must produce in comment
lines at their end, in order of position:

    // EXPECT 12:16 error mcpl-aliasing 'a' is passed to 'copy' twice, as arguments 2 and 3, ...
    // HINT pass a separate copy, or split the call

EXPECT gives line:column, severity, code and the whole message; the optional HINT line
after it gives the whole hint. The test checks that the checker reports exactly these.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from mcl.diagnostics import Diagnostic, MclError
from mcl.hdl.library import HwdLibrary, load_library
from mcl.mcpl import parse, statement_reuse
from mcl.mcpl.check import check_program
from mcl.mcpl.loader import load_program

HERE = Path(__file__).resolve().parent
BROKEN = HERE / "broken"
TEST_HWDS = HERE / "hwd"  # descriptions only these tests use (Fig. 6's `blocked`, `bare`)
REPO = HERE.parent.parent

_EXPECT = re.compile(r"^//\s*EXPECT\s+(\d+):(\d+)\s+(error|warning)\s+(\S+)\s+(.*)$")
_HINT = re.compile(r"^//\s*HINT\s+(.*)$")


@dataclass
class Expected:
    line: int
    column: int
    severity: str
    code: str
    message: str
    hint: str | None = None


@cache
def library() -> HwdLibrary:
    """The bundled descriptions plus the test ones, without $MCL_HWD_PATH."""
    return load_library([TEST_HWDS], use_env=False)


def check_path(path: Path | str, include_dirs: tuple[str, ...] = ()) -> list[Diagnostic]:
    program = load_program(path, include_dirs, library())
    return check_program(program, library())


def check_text(tmp_path: Path, text: str, name: str = "kernel.mcpl") -> list[Diagnostic]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return check_path(path)


def expectations(path: Path) -> list[Expected]:
    found: list[Expected] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        m = _EXPECT.match(line)
        if m:
            found.append(Expected(int(m[1]), int(m[2]), m[3], m[4], m[5]))
            continue
        m = _HINT.match(line)
        if m and found:
            found[-1].hint = m[1]
    return found


def summary(d: Diagnostic) -> tuple:
    span = d.span
    return (span.line if span else 0, span.column if span else 0, d.severity.value, d.code)


def ast_tree(node: object) -> object:
    """The AST as nested tuples, spans included (AST equality ignores them)."""
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return (type(node).__name__,
                *((f.name, ast_tree(getattr(node, f.name))) for f in dataclasses.fields(node)))
    if isinstance(node, tuple | list):
        return tuple(ast_tree(v) for v in node)
    return node


def parse_outcome(text: str, file: str) -> object:
    """The parse of `text` as the editor makes it (reusing what it kept): the tree, spans
    included, or the errors' texts."""
    try:
        return ast_tree(parse.parse_source(text, file))
    except MclError as exc:
        return [str(d) for d in exc.diagnostics]


def whole_parse(text: str, file: str) -> object:
    """`parse_outcome` of a parse that reuses nothing, leaving the kept definitions as
    they were."""
    kept = parse._kept
    parse.reuse_definitions(False)
    try:
        return parse_outcome(text, file)
    finally:
        parse._kept = kept


def spy_on_statement_parse(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """For each edit that tried the statements' parse (mcl.mcpl.statement_reuse), whether
    it gave the model: the list grows as the test edits."""
    made: list[bool] = []
    edited = statement_reuse.edited_model

    def spy(*args: Any) -> Any:
        model = edited(*args)
        made.append(model is not None)
        return model
    monkeypatch.setattr(statement_reuse, "edited_model", spy)
    return made
