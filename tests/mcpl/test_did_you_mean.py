"""'Did you mean' hints (`mcl.diagnostics.did_you_mean`) also match across case."""

from __future__ import annotations

from pathlib import Path

import pytest
from check_support import check_text

from mcl.diagnostics import closest_names, did_you_mean

LEVELS = ["accelerator", "cpu", "fermi", "gpu", "hopper", "mic", "nvidia", "perfect"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("GPU", ["gpu"]),  # only the case differs: that is the answer, not also 'cpu'
        ("Fermi", ["fermi"]),
        ("gpuu", ["gpu"]),  # as before: close as written
        ("FERMY", ["fermi"]),  # close only when case is ignored
        ("gpu", ["gpu", "cpu"]),  # a name that exists is its own best match, as before
        ("xyz", []),
    ],
)
def test_closest_names_ignore_case(name: str, expected: list[str]) -> None:
    assert closest_names(name, LEVELS) == expected


def test_names_that_differ_only_in_case_are_all_offered() -> None:
    assert did_you_mean("SUM", ["sum", "Sum", "total"]) == "did you mean 'Sum' or 'sum'?"
    assert did_you_mean("nothing", ["sum"]) is None


def test_the_checker_suggests_a_par_group_written_in_another_case(tmp_path: Path) -> None:
    src = ("perfect void k(int n, main float[n] a) {\n"
           "  foreach (int i in n Threads) { a[i] = 0.0; }\n}\n")
    (d,) = check_text(tmp_path, src)
    assert d.code == "mcpl-unknown-par-group" and d.hint == "did you mean 'threads'?"
    assert (d.span.line, d.span.column) == (2, 23)
