"""Property: for any counts, the units of a translated 2-D foreach visit every original
index pair exactly once, with the right values of the original indices (rounded-up
counts plus guards neither drop nor repeat work)."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcl import pipeline
from mcl.hdl.library import HwdLibrary, default_library
from mcl.interp import run_function
from mcl.mcpl import ast
from mcl.mcpl.parse import parse_source
from mcl.translate import translate_module

TOUCH = """
perfect void touch(int n, int m, main int[n, m] x) {
  foreach (int i in n threads) {
    foreach (int j in m threads) {
      x[i, j] += 1 + i * m + j;
    }
  }
}
"""


@cache
def library() -> HwdLibrary:
    return default_library()


@cache
def translated(level: str) -> ast.Module:
    return translate_module(parse_source(TOUCH), level, library()).module


@pytest.mark.parametrize("level", ["gpu", "fermi", "xeon_phi", "x86_avx512"])
@settings(max_examples=15, deadline=None)
@given(n=st.integers(0, 5), m=st.integers(0, 80))
def test_every_index_pair_is_visited_once(level: str, n: int, m: int):
    x = np.zeros((n, m), dtype=np.int32)
    run_function(pipeline.check(translated(level), library()), "touch",
                 {"n": n, "m": m, "x": x}, library())
    expected = 1 + np.arange(n * m, dtype=np.int32).reshape(n, m)
    assert np.array_equal(x, expected)
