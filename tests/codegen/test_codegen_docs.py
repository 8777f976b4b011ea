"""docs/codegen.md shows the generated code for matmul at fermi next to its MCPL source
(issue 7); the listing must be what mcl generates today."""

from __future__ import annotations

from pathlib import Path

from mcl import pipeline
from mcl.mcpl.loader import load_program
from mcl.resources import kernels_dir

from .support import library

DOCS = Path(__file__).resolve().parents[2] / "docs" / "codegen.md"
MARKER = "<!-- generated: matmul perfect fermi -->\n```c\n"


def test_docs_show_the_current_matmul_code_for_fermi() -> None:
    text = DOCS.read_text(encoding="utf-8")
    start = text.index(MARKER) + len(MARKER)
    listing = text[start : text.index("```", start)]
    source = kernels_dir() / "matmul" / "perfect.mcpl"
    generated = pipeline.generate(load_program(source, library=library()), "fermi", library())
    assert listing == generated.source, (
        "docs/codegen.md is out of date: replace the listing with the output of "
        "`mcl codegen kernels/matmul/perfect.mcpl --target fermi` (matmul.cl)"
    )
    assert source.read_text(encoding="utf-8").strip() in text  # the MCPL source beside it
