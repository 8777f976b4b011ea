"""Definite bugs the checker refuses wherever the constant operand is written: a compound
assignment (`x /= 0`, `x <<= 33`), a local that keeps its constant initial value
(`int z = 0; i / z`, `int k = 4; t[k]`), and `min`/`max` of constants (`t[max(4, 2)]`)
are checked by the rules of the plain expression (docs/checker.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from check_support import check_text

KERNEL = """\
perfect void k(int n, int[n] b) {
  foreach (int i in n threads) {
    int x = b[i];
    int[4] t;
    t[0] = 0;
    STATEMENTS
    b[i] = x + t[0];
  }
}
"""


def codes(tmp_path: Path, statements: str) -> list[tuple[int, int, str]]:
    diags = check_text(tmp_path, KERNEL.replace("STATEMENTS", statements))
    return [(d.span.line, d.span.column, d.code) for d in diags
            if d.span is not None and d.severity.value == "error"]


@pytest.mark.parametrize(("statements", "code", "column"), [
    ("x /= 0;", "mcpl-division-by-zero", 10),
    ("x %= 0;", "mcpl-division-by-zero", 10),
    ("x <<= 33;", "mcpl-shift-count", 11),
    ("x >>= -1;", "mcpl-shift-count", 11),
    ("int z = 0; x = x / z;", "mcpl-division-by-zero", 24),
    ("int z = 0; x = x % z;", "mcpl-division-by-zero", 24),
    ("int s = 40; x = x << s;", "mcpl-shift-count", 26),
    ("int k = 4; t[k] = 1;", "mcpl-index-range", 18),
    ("t[max(4, 2)] = 2;", "mcpl-index-range", 7),
    ("t[min(-1, 2)] = 2;", "mcpl-index-range", 7),
    ("int z = 0; int[z] u; u[0] = 1;", "mcpl-array-size", 20),
])
def test_a_constant_operand_is_checked_wherever_it_is_written(
        tmp_path: Path, statements: str, code: str, column: int) -> None:
    assert codes(tmp_path, statements) == [(6, column, code)]


@pytest.mark.parametrize("statements", [
    "x /= 2; x <<= 31;",
    "int z = 0; z = b[i]; x = x / z;",  # written again: its value is not known
    "int z = 0; z++; x = x / z;",
    "int k = 3; t[k] = 1;",
    "t[max(3, 2)] = 2;",
    "int d = 2; x = x / d;",
])
def test_what_is_defined_stays_accepted(tmp_path: Path, statements: str) -> None:
    assert codes(tmp_path, statements) == []
