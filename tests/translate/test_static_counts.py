"""Counts the translation believes it knows: a value bound by name must be THE value of
that name wherever the count reads it. A shadowing declaration used to be missed, so a
count was believed to divide the warps exactly and lost its guard — silently dropping work.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcl import pipeline
from mcl.hdl.library import default_library
from mcl.interp import run_function
from mcl.mcpl.parse import parse_source
from mcl.translate import translate_module

SHADOWED_HOST_DECLARATION = """
gpu void k(int n, dev float[n] a) {
  int half = 32;
  for (int r = 0; r < 1; r++) {
    int half = n;
    foreach (int b in 1 blocks) {
      foreach (int t in half threads) {
        a[t] = 1.0;
      }
    }
  }
}
"""

CONSTANT_SHADOWED_BY_PARAMETER = """
const int half = 32;
gpu void k(int half, dev float[half] a) {
  foreach (int b in 1 blocks) {
    foreach (int t in half threads) {
      a[t] = 1.0;
    }
  }
}
"""


@pytest.mark.parametrize(
    ("src", "size"),
    [(SHADOWED_HOST_DECLARATION, "n"), (CONSTANT_SHADOWED_BY_PARAMETER, "half")],
    ids=["shadowing declaration", "constant shadowed by parameter"],
)
@pytest.mark.parametrize("n", [1, 32, 40])
def test_a_shadowed_name_is_not_taken_for_a_known_count(src: str, size: str, n: int) -> None:
    library = default_library()
    module = translate_module(parse_source(src), "fermi", library).module
    a = np.zeros(n, dtype=np.float32)
    run_function(pipeline.check(module, library), "k", {size: n, "a": a}, library)
    assert a.tolist() == [1.0] * n
