"""The files on disk that may import a module (mcl.lsp.importers): found by their import
line and the name, never by an import of a description of the same name."""

from __future__ import annotations

from pathlib import Path

from mcl.lsp.importers import importers

from .conftest import KERNELS, ROOT

COMPLEX = ROOT / "tests" / "mcpl" / "paper_style" / "lib" / "math" / "complex.mcl"
TWIDDLE = ROOT / "tests" / "mcpl" / "paper_style" / "app" / "twiddle.mcpl"


def test_an_importer_is_found_by_its_import_and_the_name() -> None:
    assert importers([ROOT / "tests" / "mcpl"], COMPLEX, "magnitude") == [TWIDDLE.resolve()]
    assert importers([ROOT / "tests" / "mcpl"], COMPLEX, "noSuchName") == []


def test_an_import_of_a_description_is_not_an_import_of_the_module(tmp_path: Path) -> None:
    module = KERNELS / "matmul" / "perfect.mcpl"  # the module `perfect`; also a description
    user = tmp_path / "user.mcpl"
    user.write_text("import perfect;\nperfect void f(int n) { }\n")
    assert importers([tmp_path], module, "n") == [user.resolve()]
    assert importers([tmp_path], module, "n", descriptions={"perfect"}) == []
