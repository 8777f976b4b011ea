"""Array parameters whose values on entry the kernel never reads: its first kernel writes
every element before any is read (spmv hopper (v2) clears `y` in a first foreach nest and
adds into it with `atomicAdd` in the second). Such a parameter need not move host ->
device (the transfers analysis, paper section 5).

The order is the launches': every top-level foreach nest is a kernel of its own
(docs/codegen.md, "From a foreach nest to a kernel"), launched one after another on one
in-order OpenCL queue or CUDA stream, so every unit of the first has finished before any
unit of the second starts. Blocks of one kernel have no such order, which is why the
writes must be in an earlier nest than every read.

A nest writes every element when one of its stores runs in every unit, unguarded but for
`index < elements`, at the flat index `sum c_k * t_k` of its foreach counters with the
coefficients of a mixed radix (1, then each the previous one times that loop's trip
count), which numbers the units 0, 1, ... without a gap, and the units number at least
the elements (`256 * ceiling(nrows / 256) >= nrows`). Anything else (a for-loop, another
guard, a view, a call that is passed the array, an access on the host) answers no.
"""

from __future__ import annotations

from typing import Any

import sympy

from mcl.feedback.facts.kernel import Access, DeclaredName, KernelFacts, Loop
from mcl.feedback.facts.layout import element_count, flat_index
from mcl.mcpl import ast
from mcl.mcpl.symbolic_values import kept_per_process


def overwritten_first(facts: KernelFacts) -> set[str]:
    """The array parameters read by the kernel whose values on entry it never reads."""
    out = set()
    for p in facts.params:
        if p.is_array and "r" in facts.param_modes.get(p.name, "") and _overwritten(facts, p):
            out.add(p.name)
    return out


def _overwritten(facts: KernelFacts, param: DeclaredName) -> bool:
    accesses = [a for a in facts.accesses if a.binding.root is param]
    if not accesses or any(not a.item.loops or a.item.loops[0].kind != "foreach"
                           for a in accesses):
        return False  # an access on the host, or a nest inside a host loop
    first = min((a.item.loops[0] for a in accesses), key=_position)
    if first.parents or first.guards or _passed_to_a_call(facts, param, first):
        return False
    mine = [a for a in accesses if a.item.loops[0] is first]
    if any(a.reads or a.binding is not param for a in mine):
        return False
    return any(_covers(facts, a) for a in mine)


def _position(loop: Loop) -> tuple[int, int]:
    span = loop.span
    return (span.line, span.column) if span is not None else (0, 0)


def _passed_to_a_call(facts: KernelFacts, param: DeclaredName, nest: Loop) -> bool:
    """Is the array an argument of a call in the nest (whose accesses are the callee's)?"""
    for item in facts.items:
        if item.loops[:1] != (nest,) and item.loop is not nest:
            continue
        for call, _role in item.calls:
            for arg in call.args:
                if any(isinstance(n, ast.Name) and n.name == param.name
                       for n in ast.walk(arg)):
                    return True
    return False


def _covers(facts: KernelFacts, access: Access) -> bool:
    """Does the store write every element of its array in its nest (module docstring)?"""
    ev = facts.evaluator
    loops = access.item.loops
    if access.mode != "w" or any(x.kind != "foreach" or x.guards for x in loops):
        return False
    flat = sympy.expand(flat_index(facts, access))
    elements = element_count(facts, access.binding)
    counters = {ev.counter(x): x for x in loops}
    terms = [(flat.coeff(c), ev.trips(x)) for c, x in counters.items() if flat.coeff(c) != 0]
    rest = flat - sum(flat.coeff(c) * c for c in counters)
    if not terms or sympy.expand(rest) != 0 or any(
            sympy.sympify(c).free_symbols & set(counters) for c, _ in terms):
        return False
    if not _mixed_radix(terms) or not _at_least(terms[-1][0] * terms[-1][1], elements):
        return False
    return all(g.then and _bounds(ev.sym(g.cond, g.scope), flat, elements)
               for g in access.item.guards)


def _mixed_radix(terms: list[tuple[Any, Any]]) -> bool:
    terms.sort(key=lambda t: (not t[0].is_Number, t[0] if t[0].is_Number else 0))
    if terms[0][0] != 1:
        return False
    for (c, trips), (after, _) in zip(terms, terms[1:], strict=False):
        if sympy.expand(after - c * trips) != 0:
            return False
    return True


# A `sympy.simplify` of two formulas in the sizes (a tenth of spmv's feedback job after an
# edit), the same at every edit that leaves the nest as it was: proven once per process,
# as the other pure SymPy steps the editor's worker asks again (docs/feedback.md, "Speed").
@kept_per_process(256)
def _at_least(units: Any, elements: Any) -> bool:
    """units >= elements, proven: a ceiling is at least its argument, so `units` with
    every ceiling replaced by its argument is a lower bound (the factors are positive)."""
    lower = sympy.sympify(units).replace(sympy.ceiling, lambda u: u)
    difference = sympy.simplify(lower - elements)
    return difference.is_number and bool(difference >= 0)


def _bounds(rel: Any, flat: Any, elements: Any) -> bool:
    """Is the condition `flat < elements` (or `elements > flat`)?"""
    if isinstance(rel, sympy.StrictLessThan):
        return sympy.expand(rel.lhs - rel.rhs - (flat - elements)) == 0
    if isinstance(rel, sympy.StrictGreaterThan):
        return sympy.expand(rel.rhs - rel.lhs - (flat - elements)) == 0
    return False
