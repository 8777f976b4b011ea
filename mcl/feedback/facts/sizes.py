"""Sizes in bytes of MCPL types, symbolically (for transfers, and cache and memory-use
analyses). Sizes follow OpenCL C, the language the compiler generates (section 7)."""

from __future__ import annotations

from functools import reduce
from typing import Any

import sympy

from mcl.feedback.facts.kernel import DeclaredName, KernelFacts, Scope, dims
from mcl.feedback.facts.symbolic import SymbolicEvaluator
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.mcpl.types import PRIMITIVES
from mcl.mcpl.visitor import unknown_node

PRIMITIVE_BYTES = {p.name: p.size for p in PRIMITIVES.values() if p.size}


def element_bytes(t: ast.Type | None, lookup_type: Any, ev: SymbolicEvaluator, scope: Scope) -> Any:
    """Bytes of one element of `t` (of the whole value for a scalar type)."""
    match t:
        case ast.ArrayType():
            return element_bytes(t.element, lookup_type, ev, scope)
        case ast.Prim():
            return sympy.Integer(PRIMITIVE_BYTES.get(t.name, 0))
        case ast.NamedType():
            typedef = lookup_type(t.name)
            if typedef is None:
                return sympy.Symbol(f"sizeof_{t.name}", integer=True, positive=True)
            # A parameterised type (`type Tile(int n) { float[n] data; }`): its fields' sizes
            # use the arguments given where it is used.
            subst = {sympy.Symbol(p.name, integer=True, positive=True): ev.sym(a, scope)
                     for p, a in zip(typedef.params, t.args, strict=False)}
            total = sympy.Integer(0)
            for f in typedef.fields:
                size = element_bytes(f.type, lookup_type, ev, scope)
                if isinstance(f.type, ast.ArrayType):
                    size *= _product(_local_dims(f.type))
                total += sympy.sympify(size).xreplace(subst)
            return total
        case None:
            return sympy.Integer(0)
        case _:
            unknown_node(t, "the element sizes")


def array_elements(b: DeclaredName, ev: SymbolicEvaluator) -> Any:
    """Number of elements of an array binding (product of all its dimensions)."""
    scope = b.scope if b.scope is not None else Scope(None, None, None)
    return _product([ev.sym(d, scope) for d in dims(b)])


def binding_bytes(b: DeclaredName, lookup_type: Any, ev: SymbolicEvaluator) -> Any:
    """Bytes a variable occupies: elements times element size."""
    scope = b.scope if b.scope is not None else Scope(None, None, None)
    size = element_bytes(b.type, lookup_type, ev, scope)
    if b.is_array:
        size = size * array_elements(b, ev)
    return sympy.expand(size)


def _local_dims(t: ast.ArrayType) -> list[Any]:
    # Field sizes inside a type definition name the type's own parameters.
    out = []
    for group in t.dims:
        for d in group:
            if isinstance(d, ast.IntLit):
                out.append(sympy.Integer(d.value))
            elif isinstance(d, ast.Name):
                out.append(sympy.Symbol(d.name, integer=True, positive=True))
            else:
                # Named by its text: equal sizes are one symbol, and the name is the same
                # in every run.
                out.append(sympy.Symbol(f"size_of({print_expr(d)})", integer=True,
                                        positive=True))
    return out


def _product(xs: list[Any]) -> Any:
    return reduce(lambda a, b: a * b, xs, sympy.Integer(1))


def parameter_bytes(facts: KernelFacts) -> list[tuple[str, str, Any]]:
    """(parameter, mode, bytes) for every array parameter the kernel reads or writes."""
    out = []
    for b in facts.params:
        mode = facts.param_modes.get(b.name, "")
        if b.is_array and mode:
            out.append((b.name, mode, binding_bytes(b, facts.view.lookup_type,
                                                    facts.evaluator)))
    return out


def space_and_size(facts: Any, key: tuple[str, str]) -> tuple[str, Any]:
    """The memory space of an access-count key and the bytes of one element there: a
    parameter's own element type; for a space, the largest element of the arrays the
    function declares in it."""
    empty = Scope(None, None, None)
    if key[0] == "param":
        p = facts.param(key[1])
        if p is not None:
            return p.space or "?", element_bytes(p.type, facts.view.lookup_type,
                                                 facts.evaluator, empty)
        return "?", sympy.Integer(0)
    sizes = [element_bytes(b.type, facts.view.lookup_type, facts.evaluator,
                           b.scope or empty)
             for b in facts.bindings if b.root is b and b.space == key[1]]
    numbers = [s for s in sizes if isinstance(s, sympy.Integer)]
    return key[1], max(numbers) if numbers else (sizes[0] if sizes else sympy.Integer(4))
