"""Mutated kernels never crash `mcl check` (issue 3 acceptance): deleting, duplicating and
swapping tokens and renaming identifiers of valid and broken kernels gives diagnostics
and exit status 0 or 1, never a traceback (the CLI's exit status 2)."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from check_support import BROKEN, HERE, REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcl.cli import main

SOURCES = [
    *sorted(REPO.glob("kernels/*/*.mcpl")),
    *sorted((HERE / "listings").glob("*.mcpl")),
    *sorted(BROKEN.glob("*.mcpl")),
    HERE / "paper_style" / "app" / "twiddle.mcpl",
]
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?"
                    r"|<=>|[-+*/%<>=!&|^]=?|\S")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def tokens(text: str) -> list[tuple[int, int]]:
    # Comments are dropped first so mutations hit code, not prose.
    return [m.span() for m in _TOKEN.finditer(text)]


def strip_comments(text: str) -> str:
    return re.sub(r"//[^\n]*|/\*[\s\S]*?\*/", "", text)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, str]:
    path = draw(st.sampled_from(SOURCES))
    text = strip_comments(path.read_text(encoding="utf-8"))
    for _ in range(draw(st.integers(1, 3))):
        spans = tokens(text)
        if not spans:
            break
        kind = draw(st.sampled_from(["delete", "duplicate", "swap", "rename"]))
        i = draw(st.integers(0, len(spans) - 1))
        a, b = spans[i]
        if kind == "delete":
            text = text[:a] + text[b:]
        elif kind == "duplicate":
            text = text[:b] + " " + text[a:b] + text[b:]
        elif kind == "swap":
            c, d = spans[draw(st.integers(0, len(spans) - 1))]
            if b <= c:
                text = text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]
        else:
            names = sorted(set(_IDENT.findall(text)))
            old = draw(st.sampled_from(names))
            new = draw(st.sampled_from([*names, "x1", "threads", "main", "perfect", "int"]))
            text = re.sub(rf"\b{re.escape(old)}\b", new, text)
    return path.name, text


@settings(
    max_examples=int(os.environ.get("MCL_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mutated())
def test_mutated_kernels_give_diagnostics_not_tracebacks(case: tuple[str, str]) -> None:
    name, text = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_text(text, encoding="utf-8")
        # Modules next to the broken kernels stay importable.
        code = main(["check", "-I", str(BROKEN), "--format", "json", str(path)])
    assert code in (0, 1), f"mcl check crashed on:\n{text}"
