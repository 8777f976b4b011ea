"""Fuzzing the parser with broken versions of valid kernels: whatever the damage, the only
outcomes are a Module or an MclError with a positioned diagnostic — never a traceback."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcl.diagnostics import MclError
from mcl.mcpl.ast import Module
from mcl.mcpl.parse import parse_source
from mcl.mcpl.printer import print_module
from mcl.resources import kernels_dir, mcpl_stdlib_dir

SOURCES = [
    p.read_text()
    for p in (
        sorted(Path(__file__).with_name("listings").glob("*.mcpl"))
        + sorted(kernels_dir().glob("*/*.mcpl"))
        + sorted(mcpl_stdlib_dir().rglob("*.mcpl"))
    )
]
TOKEN = re.compile(
    r"//[^\n]*|/\*[\s\S]*?\*/|[A-Za-z_]\w*|\d+\.?\d*(?:[eE][+-]?\d+)?|<=>|<<=|>>=|[-+*/%<>=!&|]=?|"
    r"\+\+|--|&&|\|\||\S"
)
IDENT = re.compile(r"[A-Za-z_]\w*")
# Renames draw on ordinary names, keywords and description names, so that names collide
# with reserved words and `x.y` chains flip between fields and description constants.
NEW_NAMES = st.sampled_from(
    [
        "x",
        "tmp",
        "in",
        "for",
        "int",
        "foreach",
        "threads",
        "main",
        "gpu",
        "perfect",
        "Complex",
        "true",
        "as",
        "const",
        "mcl_builtin_read",
        "A1",
        "_",
        "barrier",
        "type",
        "export",
    ]
)


def tokens(src: str) -> list[tuple[int, int]]:
    return [m.span() for m in TOKEN.finditer(src)]


@st.composite
def mutated_sources(draw: st.DrawFn) -> str:
    src = draw(st.sampled_from(SOURCES))
    for _ in range(draw(st.integers(1, 3))):
        spans = tokens(src)
        if not spans:
            break
        start, end = spans[draw(st.integers(0, len(spans) - 1))]
        kind = draw(st.sampled_from(["delete", "duplicate", "rename", "swap"]))
        piece = src[start:end]
        if kind == "delete":
            src = src[:start] + src[end:]
        elif kind == "duplicate":
            src = src[:start] + piece + " " + piece + src[end:]
        elif kind == "rename":
            names = [s for s in spans if IDENT.fullmatch(src[s[0] : s[1]])]
            if names:
                old = src[slice(*names[draw(st.integers(0, len(names) - 1))])]
                new = draw(NEW_NAMES)
                everywhere = draw(st.booleans())
                pattern = rf"\b{re.escape(old)}\b"
                src = re.sub(pattern, new, src, count=0 if everywhere else 1)
        else:
            other_start, other_end = spans[draw(st.integers(0, len(spans) - 1))]
            if other_start > end:
                other = src[other_start:other_end]
                src = src[:start] + other + src[end:other_start] + piece + src[other_end:]
    return src


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mutated_sources())
def test_mutated_kernels_give_a_module_or_diagnostics(src: str) -> None:
    try:
        m = parse_source(src, "fuzz.mcpl")
    except MclError as exc:
        assert exc.diagnostics
        for d in exc.diagnostics:
            assert d.span is not None and d.span.file == "fuzz.mcpl"
            assert d.span.line >= 1 and d.span.column >= 1
            assert d.message and d.hint
        return
    assert isinstance(m, Module)
    # Whatever still parses must also survive printing.
    assert parse_source(print_module(m)) == m


def test_there_is_something_to_fuzz() -> None:
    assert len(SOURCES) >= 6
