"""Readable generated names (the paper's Fig. 9) that never clash."""

from __future__ import annotations

import pytest

from mcl.mcpl import ast
from mcl.translate.naming import NameSupply, dimension_name, index_name


@pytest.mark.parametrize(
    ("count", "index", "expected"),
    [
        (ast.Name("m"), "j", "nrThreadsM"),  # Fig. 9
        (ast.Name("N"), "i", "nrThreadsN"),
        (ast.Name("MAX_LEN"), "i", "nrThreadsMaxLen"),
        (ast.Name("NR_THREADS_M"), "tj", "nrThreadsTj"),  # already a count: use the index
        (ast.Name("nrThreadsM"), "tj", "nrThreadsTj"),
        (ast.Name("local_n"), "i", "nrThreadsI"),  # not a parameter or constant
        (ast.Binary("/", ast.Name("n"), ast.IntLit(2)), "c", "nrThreadsC"),
        (ast.IntLit(256), "t", "nrThreadsT"),
    ],
)
def test_dimension_names(count: ast.Expr, index: str, expected: str):
    globals_ = {"m", "N", "MAX_LEN", "NR_THREADS_M", "n"}
    assert dimension_name("threads", count, index, globals_) == expected


def test_index_names_take_the_first_letter_of_the_par_group():
    assert [index_name(g, "j") for g in ("blocks", "threads", "warps", "vectors")] == [
        "bj", "tj", "wj", "vj",
    ]


def test_fresh_names_avoid_taken_and_earlier_fresh_names():
    names = NameSupply({"bj", "bj2"})
    assert [names.fresh("bj"), names.fresh("bj"), names.fresh("tj")] == ["bj3", "bj4", "tj"]
    assert "bj3" in names
