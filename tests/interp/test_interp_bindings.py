"""The interpreter reads which declaration a name stands for, and the types of names,
fields, elements and calls, from the checked program's side tables
(docs/interpreter.md): it keeps no scopes of its own."""

from __future__ import annotations

import numpy as np
from interp_helpers import FILE, library, run, run_error

from mcl import pipeline
from mcl.interp import run_function
from mcl.mcpl.parse import parse_source

SIBLINGS = """
perfect void f(int n, float[n] out) {
  foreach (int i in n threads) {
    if (i < 2) {
      float t = 0.5;
      out[i] = t + 1.0;
    } else {
      int t = 7 / 2;
      out[i] = t;
    }
  }
}
"""


def test_equal_names_of_sibling_blocks_are_their_own_declarations() -> None:
    out = np.zeros(4, dtype=np.float32)
    run(SIBLINGS, "f", {"n": 4, "out": out})
    # the float t of the first block, the int t (C division) of the second
    assert out.tolist() == [1.5, 1.5, 3.0, 3.0]


def test_a_name_the_checker_bound_to_nothing_is_an_error_with_its_position() -> None:
    source = "perfect void f(int n, float[n] out) { out[0] = missing; }"
    d = run_error(source, "f", {"n": 1, "out": np.zeros(1, dtype=np.float32)})
    assert d.code == "interp-unknown-name" and "'missing'" in d.message
    assert d.span is not None and d.span.line == 1 and "mcl check" in (d.hint or "")


def test_the_checked_program_is_the_one_that_runs() -> None:
    checked = pipeline.check(parse_source(SIBLINGS, file=FILE), library())
    assert not checked.errors
    out = np.zeros(3, dtype=np.float32)
    result = run_function(checked, "f", {"n": 3, "out": out}, library())
    assert result["out"] is out and out.tolist() == [1.5, 1.5, 3.0]
