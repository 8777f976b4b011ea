"""Every checker rule (mcpl.md §5) on broken kernels: message, position, code and hint.

Each file in tests/mcpl/broken/ lists the diagnostics it must produce (see
check_support.py); the checker must report exactly those, in order. The targeted tests
below pin single rules on small inline kernels.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from check_support import BROKEN, check_path, check_text, expectations, summary

from mcl.diagnostics import Severity

BROKEN_KERNELS = sorted(BROKEN.glob("*.mcpl"))


def test_every_rule_has_a_broken_kernel() -> None:
    codes = {e.code for path in BROKEN_KERNELS for e in expectations(path)}
    rules = {
        "mcpl-unknown-name",
        "mcpl-unknown-function",
        "mcpl-unknown-type",
        "mcpl-unknown-field",
        "mcpl-unknown-space",
        "mcpl-unknown-par-group",
        "mcpl-unknown-hwd",
        "mcpl-unknown-hwd-constant",  # rule 1
        "mcpl-type-mismatch",
        "mcpl-condition-type",
        "mcpl-index-type",
        "mcpl-index-count",
        "mcpl-argument-count",
        "mcpl-not-assignable",
        "mcpl-signature",
        "mcpl-return",
        "mcpl-argument-type",
        "mcpl-assign-const",
        "mcpl-int-range",
        "mcpl-shift-count",  # rule 2
        "mcpl-foreach-nesting",
        "mcpl-foreach-count",  # rule 3
        "mcpl-statement-level",
        "mcpl-declaration-level",  # rule 4
        "mcpl-barrier",  # rule 5
        "mcpl-array-size",  # rule 6
        "mcpl-aliasing",
        "mcpl-read-only-write",
        "mcpl-missing-space",  # rule 7
        "mcpl-index-range",
        "mcpl-foreach-limit",
        "mcpl-byte-range",
        "mcpl-division-by-zero",
        "mcpl-barrier-divergence",
        "mcpl-write-race",
        "mcpl-uninitialised",  # units and values (docs/checker.md)
    }
    assert rules <= codes, f"rules without a broken kernel: {sorted(rules - codes)}"


@pytest.mark.parametrize("path", BROKEN_KERNELS, ids=lambda p: p.stem)
def test_broken_kernel_reports_exactly_its_expectations(path: Path) -> None:
    expected = expectations(path)
    assert expected, f"{path.name} states no EXPECT lines"
    diags = check_path(path)
    assert [summary(d) for d in diags] == [(e.line, e.column, e.severity, e.code) for e in expected]
    for d, e in zip(diags, expected, strict=True):
        assert d.span is not None and d.span.file == str(path)
        assert d.message == e.message
        assert d.hint == e.hint


# ------------------------------------------------------------------ single rules


def errors(diags: list) -> list:
    return [d for d in diags if d.severity == Severity.ERROR]


def test_scopes_for_and_foreach_variables_end_with_their_statement(tmp_path: Path) -> None:
    diags = check_text(
        tmp_path,
        "perfect void f(int n, main float[n] a) {\n"
        "  foreach (int i in n threads) {\n"
        "    for (int k = 0; k < n; k++) {\n"
        "      a[i] = a[k];\n"
        "    }\n"
        "    a[i] = a[k];\n"
        "  }\n"
        "}\n",
    )
    [d] = diags
    assert (d.code, d.span.line, d.span.column) == ("mcpl-unknown-name", 6, 14)
    assert d.hint == "'k' is declared at line 3, in a block that does not enclose this use"


def test_shadowing_in_an_inner_block_is_allowed_but_redeclaring_is_not(tmp_path: Path) -> None:
    diags = check_text(
        tmp_path,
        "perfect void f(int n, main float[n] a) {\n"
        "  foreach (int i in n threads) {\n"
        "    float x = 1.0;\n"
        "    if (i > 0) {\n"
        "      float x = 2.0;\n"
        "      a[i] = x;\n"
        "    }\n"
        "    float x = 3.0;\n"
        "    a[i] = x;\n"
        "  }\n"
        "}\n",
    )
    [d] = errors(diags)
    assert (d.code, d.span.line, d.span.column) == ("mcpl-duplicate", 8, 11)
    assert d.message == "'x' is already declared in this block"
    assert d.hint == "the first declaration is at line 3"


def test_tiled_arrays_take_one_bracket_group_per_level(tmp_path: Path) -> None:
    ok = check_text(
        tmp_path,
        "perfect void tiles(main int[2,2][3,3] d2, main int[3,3] tile) {\n"
        "  foreach (int t in 2 threads) {\n"
        "    d2[t, 0][1, 2] = tile[0, 1];\n"
        "    copyTile(d2[t, 1], tile);\n"
        "  }\n"
        "}\n"
        "perfect void copyTile(main int[3,3] dst, main int[3,3] src) {\n"
        "  dst[0, 0] = src[0, 0];\n"
        "}\n",
    )
    assert ok == []
    bad = check_text(
        tmp_path,
        "perfect void tiles(main int[2,2][3,3] d2) {\n"
        "  foreach (int t in 2 threads) {\n"
        "    d2[t, 0, 1, 2] = 1;\n"
        "  }\n"
        "}\n",
        name="bad.mcpl",
    )
    [d] = bad
    assert (d.code, d.span.line, d.span.column) == ("mcpl-index-count", 3, 5)
    assert (
        d.message == "'d2' of type int[_, _][_, _] takes 2 indices in this bracket group, 4 given"
    )
    assert d.hint == "index all dimensions of each group, e.g. d2[i, j][k, l]"


def test_arrays_of_rows_are_not_2d_arrays(tmp_path: Path) -> None:
    diags = check_text(
        tmp_path,
        "perfect void rows(int h, int w, main float[h][w] img, main float[h, w] out) {\n"
        "  foreach (int i in h threads) {\n"
        "    out[i, 0] = img[i][0] + img[i, 0];\n"
        "  }\n"
        "}\n",
    )
    [d] = diags
    assert (d.code, d.span.line, d.span.column) == ("mcpl-index-count", 3, 29)
    assert "takes 1 index in this bracket group, 2 given" in d.message


def test_host_code_computes_sizes_as_in_fig9(tmp_path: Path) -> None:
    diags = check_text(
        tmp_path,
        "gpu void f(int n, int m, dev float[n, m] c) {\n"
        "  int nrThreadsM = gpu.hierarchy.blocks.block.threads.max_nr_units;\n"
        "  int nrBlocksM = m / nrThreadsM;\n"
        "  if (nrBlocksM == 0) {\n"
        "    nrBlocksM = 1;\n"
        "  }\n"
        "  foreach (int bi in n blocks) {\n"
        "    foreach (int bj in nrBlocksM blocks) {\n"
        "      local float[nrThreadsM] tile;\n"
        "      foreach (int tj in nrThreadsM threads) {\n"
        "        tile[tj] = 0.0;\n"
        "        c[bi, bj * nrThreadsM + tj] = tile[tj];\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n",
    )
    assert diags == []


def test_a_function_without_foreach_runs_in_its_callers_threads(tmp_path: Path) -> None:
    # Library-style helpers (section 4.3) have no foreach: their statements execute in
    # the innermost foreach of the caller, so they are not host code.
    diags = check_text(
        tmp_path,
        "perfect void inc(int n, main float[n] a, int i) {\n  a[i] = a[i] + 1.0;\n}\n",
    )
    assert diags == []


def test_const_local_sizes_arrays_like_a_parameter(tmp_path: Path) -> None:
    diags = check_text(
        tmp_path,
        "perfect void f(int n, main float[n] a) {\n"
        "  const int x = 4;\n"
        "  int per = n / x;\n"
        "  foreach (int i in per threads) {\n"
        "    float[x] sums;\n"
        "    float[per] row;\n"
        "    sums[0] = 0.0;\n"
        "    row[0] = sums[0];\n"
        "    a[i] = row[0];\n"
        "  }\n"
        "}\n",
    )
    assert diags == []


def test_size_through_a_local_reports_the_written_parameter(tmp_path: Path) -> None:
    diags = check_text(
        tmp_path,
        "perfect void f(int n, main float[n] a) {\n"
        "  int half = n / 2;\n"
        "  n = 3;\n"
        "  foreach (int i in half threads) {\n"
        "    float[half] t;\n"
        "    t[0] = 1.0;\n"
        "    a[i] = t[0];\n"
        "  }\n"
        "}\n",
    )
    assert [(d.code, d.span.line, d.span.column) for d in diags] == [
        ("mcpl-array-size", 1, 34),
        ("mcpl-array-size", 5, 11),
    ]
    assert (
        diags[1].message == "an array size cannot use 'n' (through 'half'): 'n' is written in 'f'"
    )


def test_write_through_a_callee_is_inferred_for_aliasing_and_read_only(tmp_path: Path) -> None:
    diags = check_text(
        tmp_path,
        "perfect void inner(main float[4] v) {\n"
        "  v[0] = 1.0;\n"
        "}\n"
        "perfect void outer(main float[4] w, main float[4] r) {\n"
        "  inner(w);\n"
        "  w[1] = r[0];\n"
        "}\n"
        "perfect void k(main float[4] a) {\n"
        "  foreach (int i in 1 threads) {\n"
        "    outer(a, a);\n"
        "  }\n"
        "}\n",
    )
    [d] = diags
    assert (d.code, d.span.line, d.span.column) == ("mcpl-aliasing", 10, 14)
    assert "'outer' writes its parameter 'w'" in d.message


def test_only_one_placement_error_for_a_misplaced_loop(tmp_path: Path) -> None:
    diags = check_text(
        tmp_path,
        "gpu void f(int n, dev float[n] a) {\n"
        "  foreach (int b in n blocks) {\n"
        "    for (int k = 0; k < n; k++) {\n"
        "      a[k] = 0.0;\n"
        "    }\n"
        "    foreach (int t in 32 threads) {\n"
        "      a[t] = 1.0;\n"
        "    }\n"
        "  }\n"
        "}\n",
    )
    [d] = diags
    assert (d.code, d.span.line, d.span.column, d.span.end_column) == (
        "mcpl-statement-level",
        3,
        5,
        8,
    )
    assert d.message == (
        "this statement stands at the level of par_unit 'block', but only the executing "
        "par_unit 'thread' runs statements"
    )


def test_fig6_declaration_at_block_level(tmp_path: Path) -> None:
    # The paper's Fig. 6 on its own hierarchy (tests/mcpl/hwd/blocked.hdl).
    listing = Path(__file__).parent / "listings" / "fig06_nesting.mcpl"
    assert check_path(listing) == [
        d for d in check_path(listing) if d.code == "mcpl-unused-variable"
    ]
    moved = (
        listing.read_text()
        .replace("      main int[n] a;\n      foreach (int it", "      foreach (int it")
        .replace("        foreach (int jt", "        main int[n] a;\n        foreach (int jt")
    )
    diags = errors(check_text(tmp_path, moved, "fig06_moved.mcpl"))
    [d] = diags
    assert d.code == "mcpl-declaration-level"
    assert d.message == (
        "'a': memory space 'main' is declared in par_unit 'block', so a declaration in it "
        "cannot stand at par_unit 'thread'"
    )
    assert d.hint == (
        "declare it directly inside `foreach (... blocks)`; spaces for this level: global, reg"
    )


def test_an_expression_too_long_to_walk_is_a_diagnostic(tmp_path: Path) -> None:
    terms = " + ".join(["1.0"] * 3000)
    diags = check_text(
        tmp_path,
        "perfect void f(int n, main float[n] a) {\n"
        f"  foreach (int i in n threads) {{\n    a[i] = {terms};\n  }}\n}}\n",
    )
    [d] = diags
    assert (d.code, d.span.line, d.span.column) == ("mcpl-too-deep", 1, 1)
