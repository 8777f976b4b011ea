"""Shifts in the symbolic evaluator (issue 11: fermi's warp check could not evaluate
`half = WARP_SIZE >> step` and warned "depends on data" on gesummv's reduction)."""

from __future__ import annotations

from functools import cache
from typing import Any

import sympy
from conftest import KERNELS, by_code, feedback, feedback_source
from hypothesis import given, settings
from hypothesis import strategies as st

from mcl import pipeline
from mcl.feedback.facts.kernel import build_facts
from mcl.hdl.library import default_library
from mcl.mcpl.operators import shift_left, shift_right
from mcl.mcpl.parse import parse_source

KERNEL = """
perfect void f(int a, int s, float[1] y) {
  y[0] = a >> s;
  y[0] = a << s;
}
"""


@cache
def _shift_expressions() -> dict[str, Any]:
    """The evaluator's expressions for `a >> s` and `a << s`."""
    module = parse_source(KERNEL)
    function = module.functions[-1]
    checked = pipeline.check(module, default_library())
    facts = build_facts(function, checked, default_library().get("perfect"))
    return {item.node.value.op: facts.evaluator.sym(item.node.value, item.scope)
            for item in facts.items}


@settings(deadline=None)
@given(a=st.integers(-10**6, 10**6), b=st.integers(0, 20))
def test_the_symbolic_shifts_mean_what_the_language_says(a: int, b: int) -> None:
    """The evaluator's value of `a >> s` and `a << s` equals mcl.mcpl.operators' (the
    interpreter's and constant folding's rule) for every a and s."""
    # xreplace: every symbol at once (the parameters are assumed positive, so replacing
    # `a` first would let SymPy simplify floor(1/2**s) to 0 before s becomes 0)
    values = {op: expr.xreplace({sym: sympy.Integer({"a": a, "s": b}[sym.name])
                                 for sym in expr.free_symbols})
              for op, expr in _shift_expressions().items()}
    assert values[">>"] == shift_right(a, b) and values["<<"] == shift_left(a, b)


def test_a_shifted_subscript_is_not_data() -> None:
    messages = feedback_source("""
fermi void f(int n, global float[n] y, global float[64] x) {
  foreach (int b in 1 blocks) {
    foreach (int w in 1 warps) {
      foreach (int t in 32 threads) {
        for (int step = 1; step <= 5; step++) {
          int half = 32 >> step;
          y[t] = x[t + half] + x[(t << 1) >> 1];
        }
      }
    }
  }
}
""", level="fermi", values={"n": 32})
    assert not by_code(messages, "warp-access-unknown")


def test_gesummv_reduction_at_fermi_is_judged_not_data() -> None:
    messages = feedback(KERNELS / "gesummv" / "fermi_v1.mcpl", values={"n": 4096})
    assert not by_code(messages, "warp-access-unknown")
    (optimal,) = by_code(messages, "memory-access-optimal")
    # 13 of the 14: the store of 0.0 in the else-branch of `jx < n` runs for no thread
    # of the first block's first phase at n = 4096, so no warp's access is examined
    assert "no bank conflicts in the 13 shared-memory accesses" in optimal.text
