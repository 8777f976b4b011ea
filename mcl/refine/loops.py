"""The shape of a `for` loop as the refinements read it: `for (int k = START; k < BOUND;
k += STEP)`, with its trip count where the named constants fix it, and whether it runs
at least once whenever it is reached."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mcl.codegen.host_eval import Number
from mcl.mcpl import ast
from mcl.refine.places import constant_int


@dataclass(frozen=True)
class LoopShape:
    """An upward counting loop: `var` from `start` while `var < bound` (`<=` where
    `inclusive`) by `step`; `start` and `step` are the constants' values."""

    var: str
    start: int
    bound: ast.Expr
    inclusive: bool
    step: int

    def trips(self, env: Mapping[str, Number]) -> int | None:
        """The trip count when the bound is a constant; None otherwise."""
        bound = constant_int(self.bound, env)
        if bound is None:
            return None
        end = bound + 1 if self.inclusive else bound
        return max(0, -(-(end - self.start) // self.step))

    def runs(self, env: Mapping[str, Number], sizes: set[str]) -> bool:
        """Does the loop run at least once whenever it is reached? Shown where the trip
        count is a positive constant, or where it counts from 0 (from 1 with `<=`) to a
        size, an int parameter of the kernel: sizes are positive integers
        (docs/feedback.md, "How figures are computed")."""
        trips = self.trips(env)
        if trips is not None:
            return trips >= 1
        if isinstance(self.bound, ast.Name) and self.bound.name in sizes:
            return self.start <= (1 if self.inclusive else 0)
        return False


def loop_shape(loop: ast.For, env: Mapping[str, Number]) -> LoopShape | None:
    """The loop's shape, or None where it is not `for (int v = C; v < E or v <= E; v++ or
    v += C)` with constants C (C > 0)."""
    init = loop.init
    if not isinstance(init, ast.Decl) or init.init is None:
        return None
    start = constant_int(init.init, env)
    step = step_of(loop, env)
    if start is None or step is None:
        return None
    assert isinstance(loop.cond, ast.Binary)
    return LoopShape(loop.var, start, loop.cond.right, loop.cond.op == "<=", step)


def step_of(loop: ast.For, env: Mapping[str, Number]) -> int | None:
    """The constant step of `for (int v = S; v < E or v <= E; v++ or v += C)` (C > 0),
    whatever S is (a CSR row's loop starts where the data say); None for another loop."""
    init, var = loop.init, loop.var
    if not isinstance(init, ast.Decl) or init.init is None:
        return None
    match loop.cond:
        case ast.Binary(op="<" | "<=", left=ast.Name(name=name)) if name == var:
            pass
        case _:
            return None
    match loop.step:
        case ast.IncDec(op="++"):
            step: int | None = 1
        case ast.Assign(op="+=", value=value):
            step = constant_int(value, env)
        case _:
            return None
    return step if step is not None and step > 0 else None


def size_names(function: ast.Function) -> set[str]:
    """The function's int parameters: the sizes."""
    return {p.name for p in function.params
            if isinstance(p.type, ast.Prim) and p.type.name == "int"}
