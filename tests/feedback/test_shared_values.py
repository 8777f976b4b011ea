"""What the analyses share instead of computing again (docs/feedback.md, "Speed"): the
symbolic evaluator's values, a warp's lanes placed loop by loop, and the figures' display
forms kept for the process. Each shared result must be the one computing it again gives."""

from __future__ import annotations

import itertools
from pathlib import Path

import sympy

from mcl import pipeline
from mcl.feedback import emit
from mcl.feedback.budget import budget
from mcl.feedback.facts.costs import function_costs
from mcl.feedback.facts.kernel import KernelFacts, build_facts
from mcl.feedback.kernel_api import unit_columns, unit_positions
from mcl.hdl.library import default_library
from mcl.mcpl import ast
from mcl.mcpl.parse import parse_source

KERNELS = Path(__file__).resolve().parents[2] / "kernels"

DATA = """
perfect void f(int n, float[n] a, int[n] idx) {
  foreach (int i in n threads) {
    int j = (i + 3) / 4;
    if (j % 2 == 0 && idx[i] > 0) {
      a[j] = a[idx[i]] + 1.0;
    }
  }
}
"""


def _facts(source: str) -> KernelFacts:
    library = default_library()
    checked = pipeline.check(parse_source(source), library)
    assert not checked.errors
    function = checked.main.functions[0]
    return build_facts(function, checked, library.get(function.hwd))


def _guard(facts: KernelFacts) -> tuple[ast.Expr, ast.Expr, object]:
    """The `if`'s two sides (`j % 2 == 0`, `idx[i] > 0`) and the scope of the `if`."""
    guard = next(g for item in facts.items for g in item.guards)
    cond = guard.cond
    assert isinstance(cond, ast.Binary) and cond.op == "&&"
    return cond.left, cond.right, guard.scope


def test_a_value_is_computed_once_in_its_scope() -> None:
    facts = _facts(DATA)
    ev = facts.evaluator
    sizes, _, scope = _guard(facts)
    first = ev.sym(sizes, scope)
    assert first.free_symbols and ev.sym(sizes, scope) is first


def test_a_value_read_from_data_is_a_new_stand_in_each_time() -> None:
    # What a kernel reads from an array is unknown: every evaluation of `idx[i] > 0` says
    # so with a fresh symbol, as before values were kept, so two reads are never equal.
    facts = _facts(DATA)
    ev = facts.evaluator
    _, read, scope = _guard(facts)
    first, second = ev.sym(read, scope), ev.sym(read, scope)
    assert first != second
    assert all(ev.is_opaque(s) for s in first.free_symbols | second.free_symbols)


def test_every_kept_value_is_what_evaluating_again_gives() -> None:
    # The operation counts and the subscripts of a large kernel ask for many values,
    # some while a loop is normalised or an initialiser evaluated, where a name stands
    # for a placeholder for the time being: none of those is kept, and every value kept
    # is the value itself.
    source = (KERNELS / "convolution" / "hopper_v2.mcpl").read_text(encoding="utf-8")
    facts = _facts(source)
    function_costs(facts)
    ev = facts.evaluator
    for access in facts.accesses:  # the subscripts, as the kernel interface asks
        for index in access.indices:
            ev.sym(index, access.item.scope)
    kept = dict(ev._syms)
    assert len(kept) > 20
    for (node, scope), value in kept.items():
        assert ev._walker.value(node.obj, scope) == value, node.obj


SELF_BOUNDED = """
perfect void f(int n, float[n] a) {
  for (int k = 0; k < n - k; k++) {
    a[k] = 1.0;
  }
}
"""


def test_a_value_asked_while_its_loop_is_normalised_is_not_kept() -> None:
    # Normalising `for (k = 0; k < n - k; k++)` evaluates its bound `n - k` with k a
    # placeholder (a bound that moves with the loop is not counted); the value of
    # `n - k` asked afterwards has the loop's own k.
    facts = _facts(SELF_BOUNDED)
    ev = facts.evaluator
    loop = facts.loops[0]
    assert not ev.shape(loop).exact
    assert isinstance(loop.node, ast.For) and isinstance(loop.node.cond, ast.Binary)
    bound = loop.node.cond.right
    value = ev.sym(bound, loop.body_scope)
    assert ev.counter(loop) in value.free_symbols
    assert value == ev._walker.value(bound, loop.body_scope)


def test_lanes_are_placed_as_the_cursor_places_each_unit() -> None:
    for counts in ([32], [4, 32], [3, 1, 5], [2, 0, 7], [1, 1], [], [8, 2, 2]):
        units = list(range(0, 70)) + [127, 128, 500]
        columns = unit_columns(units, counts)
        assert len(columns) == len(counts)
        for k, unit in enumerate(units):
            assert [column[k] for column in columns] == unit_positions(unit, counts)
        total = 1
        for c in counts:
            total *= max(c, 1)
        # the units of the space, in order, are every combination, innermost fastest
        ranges = [range(max(c, 1)) for c in counts]
        expected = list(itertools.product(*ranges))
        assert [tuple(unit_positions(u, counts)) for u in range(total)] == expected


def test_a_figure_kept_for_the_process_is_not_shown_factored_out_of_budget() -> None:
    h, w, fh, fw = sympy.symbols("h w fh fw", integer=True, positive=True)
    size = sympy.expand(4 * (h + fh - 1) * (w + fw - 1))
    factored = emit.readable(size)
    assert factored != size and emit.readable(size) == factored  # kept, the same
    with budget(0.0) as b:
        assert emit.readable(size) == size  # the budget decides, as before it was kept
        assert b.cut
