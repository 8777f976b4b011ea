"""Stores at data-dependent addresses: how many units write into one copy of the array, how
many of them at once, and how many addresses they spread over (the figures behind the
irregular analysis's store messages, mcl.feedback.analyses.irregular, which explains
them). The several-elements analysis asks `contended` too: such a store is no element of
its own unit's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy

from mcl.feedback.facts.counting import iterations
from mcl.feedback.facts.kernel import Access, KernelFacts, Loop
from mcl.feedback.facts.layout import extents
from mcl.feedback.facts.predictable import loops_since_declaration, unpredictable_reasons
from mcl.feedback.facts.resident import concurrent_units
from mcl.feedback.values import evaluate
from mcl.mcpl import ast

ATOMICS = ("atomicAdd",)


@dataclass(frozen=True)
class Contention:
    """The figures of one data-dependent store (see the module docstring)."""

    access: Access
    reasons: tuple[str, ...]  # why the address depends on data
    distinct: Any  # addresses of one copy the store can reach
    sharing: tuple[Loop, ...]  # foreach loops whose units write into one copy
    writers: Any  # units that write into one copy
    updates: Any  # updates of one copy (writers times the for-loop iterations)
    concurrent: Any  # writers that run at once
    atomic: bool
    # Does the store read what it writes (`+=`, `++`, an atomic, a value that reads the same
    # array)? Only such an update loses updates when units meet at one address; a plain
    # store (`y[r] = s`) is a scatter, correct when each address has one writer, which the
    # data decides, not the code (spmv's rows stored by the thread that ends them).
    update: bool


def data_dependent(facts: KernelFacts, expr: ast.Expr, scope: Any) -> bool:
    ev = facts.evaluator
    value = ev.sym(expr, scope)
    return any(ev.is_opaque(s) for s in getattr(value, "free_symbols", ()))


def store_contention(facts: KernelFacts, access: Access,
                     values: Mapping[str, Any] | None = None) -> Contention | None:
    """The contention figures of a store whose address depends on data; None otherwise."""
    if not (access.writes and access.element and access.binding.is_array):
        return None
    ev = facts.evaluator
    scope = access.item.scope
    sizes = extents(facts, access.binding)
    if len(sizes) != len(access.indices):
        return None
    distinct = sympy.Integer(1)
    selectors: set[Loop] = set()
    reasons: list[str] = []
    for index, size in zip(access.indices, sizes, strict=True):
        if data_dependent(facts, index, scope):
            distinct = distinct * size
            reasons += unpredictable_reasons(facts, index, scope)
        else:
            selectors |= ev.deps(index, scope)
    if not reasons:
        return None
    inside = [x for x in loops_since_declaration(access) if x not in selectors]
    sharing = tuple(x for x in inside if x.kind == "foreach")
    writers = product(ev.trips(x) for x in sharing)
    # Updates of one copy: the iterations of the loops inside the declaration; a loop
    # whose trips depend on an outer loop (a grid-stride walk) counts for the first copy.
    updates, _ = iterations(ev, inside)
    outer = {ev.counter(x) for x in facts.loops} & updates.free_symbols
    updates = sympy.sympify(updates).subs({t: 0 for t in outer})
    cap = concurrent_units(facts.hwd)
    # At most the units the device runs at once write concurrently; a symbolic count of
    # writers is taken to exceed them (it grows with the problem).
    known = evaluate(writers, values or {}).numeric
    concurrent = writers if cap == float("inf") or (known is not None and known <= cap) \
        else sympy.Integer(int(cap))
    return Contention(access, tuple(dict.fromkeys(reasons)), distinct, sharing, writers,
                      updates, concurrent, is_atomic(access), _is_update(access))


def contended(facts: KernelFacts, access: Access, values: Mapping[str, Any]) -> bool:
    """Is `access` a store at a data-dependent address that more than one unit writes
    into (an update gets the store-contention message, a plain scatter none)? Such a
    store is no element of its own unit's: the several-elements advice leaves it alone."""
    c = store_contention(facts, access, values)
    return c is not None and more_than_one(c.writers, values)


def is_atomic(access: Access) -> bool:
    """Is `access` the array element an `atomicAdd` updates (its first argument)?"""
    for node in ast.walk(access.item.node):
        if isinstance(node, ast.Call) and node.func in ATOMICS and node.args \
                and node.args[0] is access.node:
            return True
    return False


def _is_update(access: Access) -> bool:
    """Does the store read the array it writes, in the same statement?"""
    root = access.binding.root
    return access.reads or any(a is not access and a.reads and a.binding.root is root
                               for a in access.item.accesses)


def product(factors: Any) -> Any:
    out = sympy.Integer(1)
    for f in factors:
        out = out * f
    return out


def more_than_one(figure: Any, values: Mapping[str, Any]) -> bool:
    number = evaluate(figure, values).numeric
    return number is None or number > 1
