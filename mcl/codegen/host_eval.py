"""Evaluate host-side MCPL (sizes, counts, Fig. 9's dimension statements) in Python, with
MCPL's operator semantics (`mcl.mcpl.operators`, shared with the interpreter), as the
generated C++ host code computes them. An operation MCPL leaves undefined (int overflow,
a shift count outside 0..31, division by zero) or a size that is not a finite number is
a diagnostic, not a guess."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mcl.codegen.plan import HostStmt, Launch
from mcl.diagnostics import MclError, error
from mcl.mcpl import operators as ops
from mcl.mcpl.ast import (
    Assign,
    Binary,
    Block,
    BoolLit,
    Call,
    Decl,
    Expr,
    FloatLit,
    For,
    If,
    IncDec,
    IntLit,
    Name,
    Node,
    Prim,
    Unary,
    UnknownNodeError,
    walk,
)
from mcl.mcpl.visitor import StrictVisitor

Number = ops.Number


def _floating(x: Number) -> Number:
    # C converts an int argument of a math function to double.
    return x if ops.is_floating(x) else np.float64(x)


def _to_int(x: Number) -> int:
    # C's cast truncates toward zero; a value outside the int range has no defined result.
    return ops.int_result(int(x), f"toInt({x})")


# Host functions keep C's precision: float (np.float32) arguments give float results.
_CALLS: dict[str, Callable[..., Number]] = {
    "toFloat": np.float32,
    "toDouble": np.float64,
    "toInt": _to_int,
    "min": min,
    "max": max,
    "abs": abs,
    "fabs": lambda x: abs(_floating(x)),
    "sqrt": lambda x: np.sqrt(_floating(x)),
    "floor": lambda x: np.floor(_floating(x)),
    "ceil": lambda x: np.ceil(_floating(x)),
    "exp": lambda x: np.exp(_floating(x)),
    "log": lambda x: np.log(_floating(x)),
    "pow": lambda a, b: ops.binary("^", _floating(a), _floating(b)),
}


def evaluate(e: Expr, env: dict[str, Number]) -> Number:
    """The value of `e` with the host variables `env`."""
    return _EVALUATOR.visit(e, env)


class _Evaluator(StrictVisitor):
    """One rule per expression kind; any other node is a diagnostic."""

    def generic_visit(self, node: Any, *args: Any, **kwargs: Any) -> Number:
        raise MclError(
            error("codegen-host-expr", f"cannot compute {type(node).__name__} on the host", node.span)
        )

    def visit_IntLit(self, e: IntLit, env: dict[str, Number]) -> Number:
        return e.value

    def visit_FloatLit(self, e: FloatLit, env: dict[str, Number]) -> Number:
        return np.float32(e.value)  # an MCPL float literal is a float, as `0.5f` in C

    def visit_BoolLit(self, e: BoolLit, env: dict[str, Number]) -> Number:
        return e.value

    def visit_Name(self, e: Name, env: dict[str, Number]) -> Number:
        if e.name not in env:
            raise MclError(
                error("codegen-host-name", f"'{e.name}' has no value on the host", e.span)
            )
        return env[e.name]

    def visit_Unary(self, e: Unary, env: dict[str, Number]) -> Number:
        v = evaluate(e.operand, env)
        if e.op == "!":
            return not v
        return _checked(lambda: ops.negate(v), e)

    def visit_Binary(self, e: Binary, env: dict[str, Number]) -> Number:
        if e.op == "&&":
            return bool(evaluate(e.left, env)) and bool(evaluate(e.right, env))
        if e.op == "||":
            return bool(evaluate(e.left, env)) or bool(evaluate(e.right, env))
        a, b = evaluate(e.left, env), evaluate(e.right, env)
        return _checked(lambda: ops.binary(e.op, a, b), e)

    def visit_Call(self, e: Call, env: dict[str, Number]) -> Number:
        if e.func not in _CALLS:
            return self.generic_visit(e)
        args = [evaluate(a, env) for a in e.args]
        return _checked(lambda: _CALLS[e.func](*args), e)


_EVALUATOR = _Evaluator()


def _target_name(target: Expr) -> str:
    """The variable a host statement assigns: host code assigns only plain names
    (`mcl.codegen.plan` keeps everything else on the device)."""
    if not isinstance(target, Name):
        raise UnknownNodeError(f"host code assigns only names, not {type(target).__name__}")
    return target.name


def _checked(compute: Callable[[], Number], e: Node) -> Number:
    """The result of one operation of `e`, or a diagnostic where MCPL defines none."""
    try:
        with np.errstate(all="ignore"):
            value = compute()
    except (ValueError, OverflowError) as exc:  # int() of NaN or inf
        raise MclError(error("codegen-host-arith", f"{exc}, computing a size", e.span)) from None
    except ops.IntegerDivisionByZero as exc:
        raise MclError(
            error("codegen-host-division", f"division by zero in a size: {exc}", e.span)
        ) from None
    except ops.OperatorError as exc:
        raise MclError(error("codegen-host-arith", f"{exc}, computing a size", e.span)) from None
    if ops.is_floating(value) and not math.isfinite(value):
        raise MclError(
            error("codegen-host-arith", f"a size is not a finite number ({value})", e.span)
        )
    return value


def static_int(e: Expr, known: dict[str, Number] | None = None) -> int | None:
    """The value of `e` when it needs no variables but those `known`, else None."""
    try:
        v = evaluate(e, dict(known or {}))
    except MclError:
        return None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


@dataclass
class HostInterpreter(StrictVisitor):
    """Runs host statements (scalar declarations, assignments, if, for) and calls
    `launch(kernel_index, env)` where a top-level foreach stood."""

    launch: Callable[[int, dict[str, Number]], None]

    def run(self, stmts: Iterable[HostStmt], env: dict[str, Number]) -> None:
        for s in stmts:
            self.stmt(s, env)

    def stmt(self, s: HostStmt, env: dict[str, Number]) -> None:
        self.visit(s, env)

    def generic_visit(self, node: Any, *args: Any, **kwargs: Any) -> None:
        raise MclError(
            error("codegen-host-stmt", f"cannot run {type(node).__name__} on the host", node.span)
        )

    def visit_Launch(self, s: Launch, env: dict[str, Number]) -> None:
        self.launch(s.kernel, env)

    def visit_Decl(self, s: Decl, env: dict[str, Number]) -> None:
        value = evaluate(s.init, env) if s.init is not None else 0
        env[s.name] = _convert(s.type, value)

    def visit_Assign(self, s: Assign, env: dict[str, Number]) -> None:
        self.assign(s, env)

    def visit_IncDec(self, s: IncDec, env: dict[str, Number]) -> None:
        name = _target_name(s.target)
        old = env[name]
        env[name] = _checked(lambda: ops.binary("+" if s.op == "++" else "-", old, 1), s)

    def visit_Block(self, s: Block, env: dict[str, Number]) -> None:
        self.run(s.stmts, env)

    def visit_If(self, s: If, env: dict[str, Number]) -> None:
        if evaluate(s.cond, env):
            self.stmt(s.then, env)
        elif s.orelse is not None:
            self.stmt(s.orelse, env)

    def visit_For(self, s: For, env: dict[str, Number]) -> None:
        self.stmt(s.init, env)
        while evaluate(s.cond, env):
            self.stmt(s.body, env)
            self.stmt(s.step, env)

    def assign(self, s: Assign, env: dict[str, Number]) -> None:
        name = _target_name(s.target)
        value = evaluate(s.value, env)
        if s.op != "=":
            old = env[name]
            value = _checked(lambda: ops.binary(ops.COMPOUND[s.op], old, value), s.value)
        env[name] = type(env[name])(value) if name in env else value


def static_host_values(stmts: Iterable[HostStmt], constants: Iterable[Decl]) -> dict[str, Number]:
    """Host variables whose value does not depend on the kernel's sizes (Fig. 9's
    `nrThreadsM = 1024`): declared at the top of the function with an initialiser made of
    constants and never assigned again."""
    stmts = list(stmts)
    known: dict[str, Number] = {}
    for c in constants:
        if c.init is not None:
            try:
                known[c.name] = _convert(c.type, evaluate(c.init, known))
            except MclError:
                pass
    assigned = {
        n.target.name
        for s in stmts
        if not isinstance(s, Launch)
        for n in walk(s)
        if isinstance(n, Assign | IncDec) and isinstance(n.target, Name)
    }
    for s in stmts:
        if isinstance(s, Decl) and s.init is not None and s.name not in assigned:
            try:
                known[s.name] = _convert(s.type, evaluate(s.init, known))
            except MclError:
                pass
    return known


def _convert(t: object, value: Number) -> Number:
    if isinstance(t, Prim) and t.name in ("int", "byte"):
        return int(value)
    if isinstance(t, Prim) and t.name == "float":
        return np.float32(value)
    if isinstance(t, Prim) and t.name == "double":
        return np.float64(value)
    return value
