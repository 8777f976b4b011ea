"""KernelFacts takes which declaration a name stands for from the checker's side tables
(docs/architecture.md, "The checker's side tables"), and its scopes add only the loop
index that carries a reused variable inside its `for`."""

from __future__ import annotations

from mcl import pipeline
from mcl.feedback.facts.kernel import KernelFacts, build_facts
from mcl.hdl.library import default_library
from mcl.mcpl import ast
from mcl.mcpl.parse import parse_source

SIBLINGS = """
perfect void f(int n, float[n] a) {
  foreach (int i in n threads) {
    if (i < 2) {
      float t = a[i];
      a[i] = t + 1.0;
    } else {
      int t = i;
      a[i] = a[i] * 2.0;
    }
  }
}
"""

REUSED = """
perfect void f(int n, float[n] a) {
  int k = 3;
  for (k = 0; k < n; k++) {
    a[k] = 1.0;
  }
  a[0] = a[k];
}
"""


def _facts(source: str) -> tuple[KernelFacts, pipeline.CheckedProgram]:
    library = default_library()
    checked = pipeline.check(parse_source(source), library)
    assert not checked.errors
    function = checked.main.functions[0]
    return build_facts(function, checked, library.get(function.hwd)), checked


def test_names_of_sibling_blocks_are_the_declarations_the_checker_bound() -> None:
    facts, checked = _facts(SIBLINGS)
    t_float, t_int = [b for b in facts.bindings if b.name == "t"]
    uses = {b: [i for i in facts.items if b in i.value_uses] for b in (t_float, t_int)}
    # `t + 1.0` uses the float t; the int t is declared but never read
    assert [i.node.span.line for i in uses[t_float]] == [6]
    assert uses[t_int] == []
    for use in ast.walk(checked.main.functions[0].body):
        if isinstance(use, ast.Name) and use.name == "t":
            assert checked.binding_of(use).node is t_float.node


def test_a_reused_variable_is_the_loop_index_inside_its_for_only() -> None:
    facts, _ = _facts(REUSED)
    k_declared, k_loop = [b for b in facts.bindings if b.name == "k"]
    assert k_declared.kind == "local" and k_loop.kind == "loop"
    assert k_loop.reuses is k_declared
    inside = next(a for a in facts.accesses if a.writes and a.node.span.line == 5)
    after = next(a for a in facts.accesses if a.reads and a.node.span.line == 7)
    assert inside.item.scope.lookup(inside.indices[0]) is k_loop
    assert after.item.scope.lookup(after.indices[0]) is k_declared
    assert facts.evaluator.shape(k_loop.loop).trips is not None
