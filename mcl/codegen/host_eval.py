"""Evaluate host-side MCPL (sizes, counts, Fig. 9's dimension statements) in Python,
with C's integer semantics (division and remainder truncate toward zero), as the
generated C++ host code computes them."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mcl.codegen.plan import HostStmt, Launch
from mcl.diagnostics import MclError, error
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
    Prim,
    Unary,
    walk,
)

Number = int | float


def c_div(a: Number, b: Number) -> Number:
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("integer division by zero")
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return a / b


def c_mod(a: Number, b: Number) -> Number:
    if isinstance(a, int) and isinstance(b, int):
        return a - c_div(a, b) * b  # type: ignore[operator]
    return math.fmod(a, b)


_BINARY: dict[str, Callable[[Number, Number], Number | bool]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": c_div,
    "%": c_mod,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<<": lambda a, b: int(a) << int(b),
    ">>": lambda a, b: int(a) >> int(b),
    "&": lambda a, b: int(a) & int(b),
    "|": lambda a, b: int(a) | int(b),
    "^": lambda a, b: a**b,
}

_CALLS: dict[str, Callable[..., Number]] = {
    "toFloat": float,
    "toDouble": float,
    "toInt": lambda x: int(x),  # truncates toward zero, as C's cast
    "min": min,
    "max": max,
    "abs": abs,
    "fabs": lambda x: abs(float(x)),
    "sqrt": lambda x: math.sqrt(x),
    "floor": lambda x: float(math.floor(x)),
    "ceil": lambda x: float(math.ceil(x)),
    "exp": math.exp,
    "log": math.log,
    "pow": lambda a, b: float(a) ** float(b),
}


def evaluate(e: Expr, env: dict[str, Number]) -> Number:
    if isinstance(e, IntLit):
        return e.value
    if isinstance(e, FloatLit):
        return e.value
    if isinstance(e, BoolLit):
        return e.value
    if isinstance(e, Name):
        if e.name not in env:
            raise MclError(
                error("codegen-host-name", f"'{e.name}' has no value on the host", e.span)
            )
        return env[e.name]
    if isinstance(e, Unary):
        v = evaluate(e.operand, env)
        return (not v) if e.op == "!" else -v
    if isinstance(e, Binary):
        if e.op == "&&":
            return bool(evaluate(e.left, env)) and bool(evaluate(e.right, env))
        if e.op == "||":
            return bool(evaluate(e.left, env)) or bool(evaluate(e.right, env))
        a, b = evaluate(e.left, env), evaluate(e.right, env)
        try:
            return _BINARY[e.op](a, b)
        except ZeroDivisionError as exc:
            raise MclError(
                error("codegen-host-division", f"division by zero in a size: {exc}", e.span)
            ) from exc
    if isinstance(e, Call) and e.func in _CALLS:
        return _CALLS[e.func](*(evaluate(a, env) for a in e.args))
    raise MclError(
        error(
            "codegen-host-expr",
            f"cannot compute {type(e).__name__} on the host",
            getattr(e, "span", None),
        )
    )


def static_int(e: Expr, known: dict[str, Number] | None = None) -> int | None:
    """The value of `e` when it needs no variables but those `known`, else None."""
    try:
        v = evaluate(e, dict(known or {}))
    except MclError:
        return None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


@dataclass
class HostInterpreter:
    """Runs host statements (scalar declarations, assignments, if, for) and calls
    `launch(kernel_index, env)` where a top-level foreach stood."""

    launch: Callable[[int, dict[str, Number]], None]

    def run(self, stmts: Iterable[HostStmt], env: dict[str, Number]) -> None:
        for s in stmts:
            self.stmt(s, env)

    def stmt(self, s: HostStmt, env: dict[str, Number]) -> None:
        if isinstance(s, Launch):
            self.launch(s.kernel, env)
        elif isinstance(s, Decl):
            value = evaluate(s.init, env) if s.init is not None else 0
            env[s.name] = _convert(s.type, value)
        elif isinstance(s, Assign):
            self.assign(s, env)
        elif isinstance(s, IncDec):
            name = s.target.name  # type: ignore[union-attr]
            env[name] = env[name] + (1 if s.op == "++" else -1)
        elif isinstance(s, Block):
            self.run(s.stmts, env)
        elif isinstance(s, If):
            if evaluate(s.cond, env):
                self.stmt(s.then, env)
            elif s.orelse is not None:
                self.stmt(s.orelse, env)
        elif isinstance(s, For):
            self.stmt(s.init, env)
            while evaluate(s.cond, env):
                self.stmt(s.body, env)
                self.stmt(s.step, env)
        else:
            raise MclError(
                error(
                    "codegen-host-stmt",
                    f"cannot run {type(s).__name__} on the host",
                    getattr(s, "span", None),
                )
            )

    def assign(self, s: Assign, env: dict[str, Number]) -> None:
        name = s.target.name  # type: ignore[union-attr]
        value = evaluate(s.value, env)
        if s.op != "=":
            value = _BINARY[s.op[:-1]](env[name], value)  # type: ignore[assignment]
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
        n.target.name  # type: ignore[union-attr]
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
    if isinstance(t, Prim) and t.name in ("float", "double"):
        return float(value)
    return value
