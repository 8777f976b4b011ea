"""Evaluate host-side MCPL (sizes, counts, Fig. 9's dimension statements) in Python, with
MCPL's operator semantics (`mcl.mcpl.operators`, shared with the interpreter), as the
generated C++ host code computes them. An operation MCPL leaves undefined (int overflow,
a shift count outside 0..31, division by zero) or a size that is not a finite number is
a diagnostic, not a guess."""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mcl.codegen.plan import HostStmt, Launch
from mcl.diagnostics import MclError, error
from mcl.mcpl import operators as ops
from mcl.mcpl.ast import (
    Assign,
    Block,
    Call,
    Decl,
    Expr,
    For,
    HwdConst,
    If,
    IncDec,
    Name,
    Node,
    Prim,
    UnknownNodeError,
    walk,
)
from mcl.mcpl.evaluate import CValues, Evaluator, NotEvaluable
from mcl.mcpl.visitor import StrictVisitor

Number = ops.Number


def evaluate(e: Expr, env: dict[str, Number]) -> Number:
    """The value of `e` with the host variables `env`."""
    return _EVALUATOR.value(e, env)


class _HostEvaluation(Evaluator[Number, dict[str, Number]]):
    """C semantics (`CValues`) on the host's variables; what the host cannot compute, and
    every operation MCPL leaves undefined, is a diagnostic at the expression."""

    def name(self, e: Name, env: dict[str, Number]) -> Number:
        if e.name not in env:
            raise MclError(
                error("codegen-host-name", f"'{e.name}' has no value on the host", e.span)
            )
        return env[e.name]

    def hwd_constant(self, e: HwdConst, env: dict[str, Number]) -> Number:
        return self.other(e, env)

    def other(self, e: Expr, env: dict[str, Number]) -> Number:
        raise MclError(
            error("codegen-host-expr", f"cannot compute {type(e).__name__} on the host", e.span)
        )

    def operate(self, e: Expr, operation: Callable[..., Number], *args: Any) -> Number:
        if isinstance(e, Call):
            import numpy  # noqa: F401 - its error state for the call (_float_errors_ignored)
        try:
            return _checked(lambda: operation(*args), e)
        except NotEvaluable:
            return self.other(e, {})


_EVALUATOR = _HostEvaluation(CValues())


def _target_name(target: Expr) -> str:
    """The variable a host statement assigns: host code assigns only plain names
    (`mcl.codegen.plan` keeps everything else on the device)."""
    if not isinstance(target, Name):
        raise UnknownNodeError(f"host code assigns only names, not {type(target).__name__}")
    return target.name


def _checked(compute: Callable[[], Number], e: Node) -> Number:
    """The result of one operation of `e`, or a diagnostic where MCPL defines none."""
    try:
        with _float_errors_ignored():
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


def _float_errors_ignored() -> Any:
    """numpy's error state with no warning of overflow or invalid values (`_checked` turns
    a result that is not finite into a diagnostic), where numpy is loaded. Where it is
    not, no numpy number exists and none of the operations of `_checked` makes one
    with a warning: a float operation needs a float operand, and `operators.binary` sets
    the same state itself; a built-in function makes floats of ints, so numpy is loaded
    before one is called (`_HostEvaluation.operate`). Code generation of a program whose
    host code computes no floats (`mcl check` at hopper, for the compiler's counts)
    therefore never loads numpy."""
    numpy = sys.modules.get("numpy")
    return contextlib.nullcontext() if numpy is None else numpy.errstate(all="ignore")


def _convert(t: object, value: Number) -> Number:
    match t:
        case Prim(name="int" | "byte"):
            return int(value)
        case Prim(name="float"):
            import numpy as np

            return np.float32(value)
        case Prim(name="double"):
            import numpy as np

            return np.float64(value)
    return value
