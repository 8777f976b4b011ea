"""Valid code checks clean: every shipped kernel, the paper's listings, the standard
library, and kernels written in the original MCL style by someone else."""

from __future__ import annotations

from pathlib import Path

import pytest
from check_support import HERE, REPO, check_path

from mcl.mcpl.check import check_program
from mcl.mcpl.loader import load_program
from mcl.resources import mcpl_stdlib_dir

SHIPPED = sorted(REPO.glob("kernels/*/*.mcpl"))
LISTINGS = sorted((HERE / "listings").glob("*.mcpl"))
STDLIB = sorted(mcpl_stdlib_dir().rglob("*.mcpl"))
PAPER_STYLE = HERE / "paper_style"


def test_there_are_kernels_to_check() -> None:
    assert len(SHIPPED) >= 9
    assert {p.parent.name for p in SHIPPED} >= {"matmul", "convolution", "histogram"}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shipped_kernel_checks_clean(path: Path) -> None:
    assert check_path(path) == []


@pytest.mark.parametrize("path", LISTINGS, ids=lambda p: p.stem)
def test_paper_listing_checks_clean(path: Path) -> None:
    diags = check_path(path)
    if path.stem == "fig06_nesting":
        # The figure declares `a` to show where it may stand, and never uses it.
        assert [(d.code, d.span.line) for d in diags] == [("mcpl-unused-variable", 8)]
    else:
        assert diags == []


@pytest.mark.parametrize("path", STDLIB, ids=lambda p: p.stem)
def test_standard_library_checks_clean(path: Path) -> None:
    assert check_path(path) == []


def test_original_style_kernels_check_clean() -> None:
    """Packages in directories, `import lib.math.common;`, CamelCase types with fields,
    `reg main` double modifiers, `mcl_builtin_read` signatures, the `.mcl` extension."""
    program = load_program(PAPER_STYLE / "app" / "twiddle.mcpl")
    assert set(program.modules) >= {"app.twiddle", "lib.math.complex", "lib.math.common"}
    from check_support import library

    assert check_program(program, library()) == []


def test_diagnostics_point_into_the_file_that_has_the_problem(tmp_path: Path) -> None:
    lib = tmp_path / "util" / "helpers.mcpl"
    lib.parent.mkdir()
    lib.write_text(
        "package util;\nmodule helpers;\nimport perfect;\n"
        "perfect float twice(float x) {\n  return x * 2.0 + y;\n}\n"
    )
    main = tmp_path / "main.mcpl"
    main.write_text(
        "import util.helpers;\n"
        "perfect void k(int n, main float[n] a) {\n"
        "  foreach (int i in n threads) {\n    a[i] = twice(a[i]);\n  }\n}\n"
    )
    [d] = check_path(main)
    assert (d.span.file, d.span.line, d.span.column) == (str(lib), 5, 20)
    assert d.message == "unknown variable 'y'"
