"""Vector copies: `for (int v = 0; v < VEC; v++) regA[g * VEC + v] = l_a[k][base + v];`
becomes one 128-bit load and store when the mapping asks for vectors of VEC floats or ints
(`codegen.vector_width = 4`; both sides of one element type).

The translation must prove what a vector access needs (a compiler that cannot prove it
falls back to VEC scalar accesses, or worse, a slow path):
- contiguity: both linearised indices are `base + v` (coefficient 1, after expanding the
  Horner form with the constants' values; `/` and `%` terms are opaque and must not
  contain v), and the trip count equals the width;
- alignment: every term of both bases is a multiple of the width, and both arrays start
  on a 16-byte boundary (kernel buffers do: OpenCL aligns a buffer to at least the size
  of its largest built-in type; `__local` and private arrays are declared
  `__attribute__((aligned(16)))` when the mapping asks for vectors). Then the copy is a
  cast to `floatN` pointers, which tells the compiler the alignment; with contiguity
  alone it is `vstoreN(vloadN(...))`, which needs only float alignment. CUDA has no
  unaligned vector access, so there contiguity alone leaves the scalar loop (cudaMalloc
  and the driver's allocations start on 256-byte boundaries, `__shared__` and private
  arrays are `__align__(16)`).
Anything else stays a scalar loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import sympy

from mcl.codegen.dialect import Dialect
from mcl.codegen.host_eval import Number
from mcl.codegen.layout import flat_dims, index_chain, linear_offset
from mcl.codegen.unroll import for_trip_count
from mcl.diagnostics import Span
from mcl.mcpl.ast import (
    ArrayType,
    Assign,
    Binary,
    Block,
    Decl,
    Expr,
    For,
    Index,
    IntLit,
    Name,
    Prim,
    Unary,
    walk,
)
from mcl.mcpl.evaluate import Evaluator
from mcl.mcpl.symbolic_values import SymPyValues
from mcl.mcpl.typed import Typed

WIDTHS = (2, 4, 8, 16)


class _HiddenVariable(Exception):
    """The loop variable inside a division, a call, ...: not provably contiguous."""


class _Offsets(Evaluator[Any, dict[str, Any]]):
    """An index as a SymPy expression (`SymPyValues`) in the loop variable: + - * and
    negation are the domain's, anything else is an opaque symbol, the same for equal
    subexpressions (`/` and `%` terms may hold v in ways contiguity cannot see)."""

    def __init__(self, var: str, constants: Mapping[str, Number]):
        super().__init__(SymPyValues())
        self.var = var
        self.constants = constants

    def name(self, e: Name, env: dict[str, Any]) -> Any:
        if e.name == self.var:
            return sympy.Symbol(self.var, integer=True)
        if e.name in self.constants and isinstance(self.constants[e.name], int):
            return sympy.Integer(int(self.constants[e.name]))
        return sympy.Symbol(f"n_{e.name}", integer=True)

    def operate(self, e: Expr, operation: Callable[..., Any], *args: Any) -> Any:
        if (isinstance(e, Binary) and e.op in ("+", "-", "*")
                or isinstance(e, Unary) and e.op == "-"):
            return operation(*args)
        return self.other(e, {})

    def other(self, e: Expr, env: dict[str, Any]) -> Any:
        if any(isinstance(n, Name) and n.name == self.var for n in walk(e)):
            raise _HiddenVariable
        key = repr(e)
        if key not in env:
            env[key] = sympy.Symbol(f"opaque_{len(env)}", integer=True)
        return env[key]


def _sympy(e: Expr, var: str, constants: Mapping[str, Number]) -> Any:
    """`e` as a sympy expression; None when the loop variable hides in an opaque term."""
    try:
        return _Offsets(var, constants).value(e, {})
    except _HiddenVariable:
        return None


def _base(offset: Expr, var: str, constants: Mapping[str, Number]) -> Any:
    """The offset's value at v = 0 when the offset is exactly `base + v`, else None."""
    expr = _sympy(offset, var, constants)
    if expr is None:
        return None
    v = sympy.Symbol(var, integer=True)
    expanded = sympy.expand(expr)
    if sympy.expand(expanded - expanded.subs(v, 0)) != v:
        return None
    return sympy.expand(expanded.subs(v, 0))


def _multiple_of(base: Any, width: int) -> bool:
    for term in sympy.Add.make_args(base):
        coefficient, _ = term.as_coeff_Mul()
        if not (coefficient.is_integer and int(coefficient) % width == 0):
            return False
    return True


def _at_zero(node: object, var: str, typed: Typed) -> object | None:
    """Rebuild step: the loop variable becomes 0, and `x + 0` becomes x."""
    if isinstance(node, Name) and node.name == var:
        return typed.int_lit(0)
    if isinstance(node, Binary) and node.op in ("+", "-"):
        if isinstance(node.right, IntLit) and node.right.value == 0:
            return node.left
        if node.op == "+" and isinstance(node.left, IntLit) and node.left.value == 0:
            return node.right
    return None


def vector_copy(
    s: For,
    width: int,
    scope: Any,
    constants: Mapping[str, Number],
    is_constant: Callable[[str], bool],
    print_expr: Callable[[Expr], str],
    dialect: Dialect,
    wide: dict[Span, int] | None = None,
) -> str | None:
    """The statement that copies the loop's `width` floats (or ints) at once, or None.
    A copy through aligned vector pointers is one access of `width` * 4 bytes per unit
    on each side, which the compiler issues as one wide load and one wide store (a
    128-bit `LDG.E.128`/`STG.E.128` for float4 at sm_90); it is entered in `wide` under
    the loop's span (the feedback judges the loop's accesses as that wide access,
    `GeneratedModule.wide_copies`). A `vloadN` copy is not: the compiler that cannot
    prove its alignment may split it."""
    if width not in WIDTHS or for_trip_count(s, constants, is_constant) != width:
        return None
    start = s.init.init if isinstance(s.init, Decl) else s.init.value
    if not (isinstance(start, IntLit) and start.value == 0):
        return None
    body = s.body.stmts if isinstance(s.body, Block) else (s.body,)
    if len(body) != 1 or not isinstance(body[0], Assign) or body[0].op != "=":
        return None
    target, value = body[0].target, body[0].value
    if not (isinstance(target, Index) and isinstance(value, Index)):
        return None
    sides = []
    used: set[str] = set()
    elements: set[str] = set()
    for e in (target, value):
        array, indices = index_chain(e)
        if not isinstance(array, Name):
            return None
        var = scope.find(array.name)
        if (var is None or not isinstance(var.type, ArrayType)
                or var.type.element not in (Prim("float"), Prim("int"))):
            return None
        elements.add(var.type.element.name)
        dims = flat_dims(var.type)
        if len(indices) != len(dims):
            return None
        offset = linear_offset(indices, dims, scope.typed)
        base = _base(offset, s.var, constants)
        if base is None:
            return None
        used |= {n.name for n in walk(offset) if isinstance(n, Name) and n.name in constants}
        at_zero = scope.tables.rewrite(e, lambda n: _at_zero(n, s.var, scope.typed))
        qualifier = dialect.qualifier(var.address_space)
        sides.append((f"&{print_expr(at_zero)}", qualifier, _multiple_of(base, width)))
    if len(elements) != 1:  # an int copied into a float converts each element
        return None
    vector = f"{elements.pop()}{width}"
    (dst, dst_q, dst_aligned), (src, src_q, src_aligned) = sides
    if dst_aligned and src_aligned:
        copy = f"*({dst_q}{vector}*){dst} = *({src_q}const {vector}*){src};"
        if wide is not None and s.span is not None:  # (4-byte elements: both types)
            wide[s.span] = width * 4
    else:
        unaligned = dialect.unaligned_vector_copy(width, src, dst)
        if unaligned is None:
            return None
        copy = unaligned
    return guard(sorted(used), constants) + copy


def guard(names: list[str], constants: Mapping[str, Number], what: str = "vector copy") -> str:
    """The proof used these constants' values: a build that overrides one of them (-D)
    stops with an error instead of running a copy that may be misaligned."""
    names = [n for n in names if isinstance(constants[n], int)]
    if not names:
        return ""
    condition = " || ".join(f"({n}) != {constants[n]}" for n in names)
    values = ", ".join(f"{n} = {constants[n]}" for n in names)
    return (
        f'#if {condition}\n#error "vector copy proven for {values}: regenerate with mcl '
        f'for other values"\n#endif\n'
    )
