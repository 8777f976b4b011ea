"""Which loops get `#pragma unroll`: those whose trip count is known when the kernel is
compiled and small (register tiles, micro-kernels).

A register array such as hopper_v2's `reg float[ELEMS_I][ELEMS_J] sums` stays in
registers only when every index into it is a constant after unrolling; otherwise the
OpenCL compiler puts it in (slow, per-thread) local memory. Whether NVIDIA's or PoCL's
compiler unrolls on its own depends on its heuristics, so loops of a constant trip count
up to the mapping's `codegen.unroll` steps say so explicitly. The pragma without a count
asks for full unrolling; a compiler may still decline, and a loop whose bounds a macro
override (`-D TILE_K=32`) makes larger is simply unrolled further or not at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from mcl.codegen.host_eval import Number, evaluate
from mcl.diagnostics import MclError
from mcl.mcpl.ast import (
    Assign,
    Binary,
    Decl,
    Expr,
    For,
    IncDec,
    Name,
    children,
    kept_union,
    walk,
)


def _value(
    e: Expr, constants: Mapping[str, Number], is_constant: Callable[[str], bool]
) -> int | None:
    if any(isinstance(n, Name) and not is_constant(n.name) for n in walk(e)):
        return None
    try:
        v = evaluate(e, dict(constants))
    except (MclError, ArithmeticError, TypeError, ValueError):
        return None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def for_trip_count(
    s: For, constants: Mapping[str, Number], is_constant: Callable[[str], bool]
) -> int | None:
    """The trip count of `for (int v = A; v < B; v++ or v += C)` with A, B, C made of
    constants and v not assigned in the body; None for any other loop."""
    var = s.var
    start = s.init.init if isinstance(s.init, Decl) else s.init.value
    if isinstance(s.init, Assign) and s.init.op != "=":
        return None
    if start is None:
        return None
    cond = s.cond
    if not (isinstance(cond, Binary) and isinstance(cond.left, Name) and cond.left.name == var):
        return None
    if cond.op not in ("<", "<="):
        return None
    step_value: int | None
    match s.step:
        case IncDec(op="++"):
            step_value = 1
        case Assign(op="+="):
            step_value = _value(s.step.value, constants, is_constant)
        case _:
            return None
    if not (isinstance(s.step.target, Name) and s.step.target.name == var):
        return None
    a = _value(start, constants, is_constant)
    b = _value(cond.right, constants, is_constant)
    if a is None or b is None or step_value is None or step_value <= 0:
        return None
    if _assigns(s.body, var):
        return None
    end = b + 1 if cond.op == "<=" else b
    return max(0, -(-(end - a) // step_value))


def _assigns(body: object, var: str) -> bool:
    return var in assigned_names(body)


_ASSIGNED = "_unroll_assigned"  # not varying.assigned_names's key: other names


def assigned_names(node: object) -> frozenset[str]:
    """The names assigned (`=`, `op=`, `++`, `--`) in the subtree of `node`, kept on each
    node and made from its children's (`kept_union`: every loop of a nest asks for its
    body's)."""
    return kept_union(node, _ASSIGNED, lambda n: list(children(n)), _own_target)


def _own_target(node: object) -> set[str]:
    return {node.target.name} if isinstance(node, Assign | IncDec) and \
        isinstance(node.target, Name) else set()


def wants_unroll(trip: int | None, limit: int) -> bool:
    """Unroll loops of 2 .. limit steps (a loop of one step needs no pragma)."""
    return trip is not None and 1 < trip <= limit


def constant_count(
    count: Expr, constants: Mapping[str, Number], is_constant: Callable[[str], bool]
) -> int | None:
    """The count of a foreach run as a loop (role `loop`) when it is made of constants."""
    return _value(count, constants, is_constant)
