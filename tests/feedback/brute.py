"""A brute-force tracer for MCPL functions: runs a function on concrete inputs, counting
how often every statement, loop header and `if` runs and logging every array element
access with the loop iteration it happened in.

It is deliberately independent of mcl.feedback (no SymPy, no closed forms): the property
tests compare the analyses' symbolic counts, evaluated at the same sizes, with what this
tracer observes. `foreach` runs its units one after another, which gives the same counts
for every kernel whose control flow does not depend on data written by other units.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mcl.mcpl import ast


class _Return(Exception):
    def __init__(self, value: Any):
        self.value = value


@dataclass
class Trace:
    counts: Counter = field(default_factory=Counter)  # (id(node), kind) -> executions
    # (id(access node), mode, element index, ((id(loop node), value), ...))
    accesses: list[tuple[int, str, tuple[int, ...], tuple[tuple[int, int], ...]]] = field(
        default_factory=list)
    read_params: set[str] = field(default_factory=set)
    written_params: set[str] = field(default_factory=set)


class _Var:
    """A variable slot (scalars are boxed so nested scopes can assign them)."""

    def __init__(self, value: Any, param: str | None = None):
        self.value = value
        self.param = param


class Tracer:
    def __init__(self, program: Any, hwd: Any, trace_callees: bool = False):
        self.program = program
        self.hwd = hwd
        self.trace = Trace()
        self.loops: list[tuple[int, int]] = []
        self.depth = 0
        self.trace_callees = trace_callees

    # ------------------------------------------------------------------ entry
    def run(self, function: ast.Function, args: dict[str, Any]) -> Trace:
        env = self._module_env(function)
        scope = dict(env)
        for p in function.params:
            value = args[p.name]
            if isinstance(value, np.ndarray):
                value = value.copy()
            scope[p.name] = _Var(value, p.name)
        self.function = function
        self._block(function.body.stmts, [scope])
        return self.trace

    def _module_env(self, function: ast.Function) -> dict[str, _Var]:
        env: dict[str, _Var] = {}
        for m in self._modules():
            for c in m.constants:
                if c.init is not None:
                    env[c.name] = _Var(self._eval(c.init, [env]))
        return env

    def _modules(self) -> list[ast.Module]:
        if isinstance(self.program, ast.Module):
            return [self.program]
        return list(self.program.modules.values())

    def _function(self, name: str) -> ast.Function | None:
        for m in self._modules():
            for f in m.functions:
                if f.name == name:
                    return f
        return None

    # ------------------------------------------------------------------ statements
    def _count(self, node: Any, kind: str) -> None:
        if self.depth == 0 or self.trace_callees:
            self.trace.counts[(id(node), kind)] += 1

    def _block(self, stmts: tuple[ast.Stmt, ...], scopes: list[dict]) -> None:
        scopes = [*scopes, {}]
        for s in stmts:
            self._stmt(s, scopes)

    def _stmt(self, s: ast.Stmt, scopes: list[dict]) -> None:
        if isinstance(s, ast.Block):
            self._block(s.stmts, scopes)
        elif isinstance(s, ast.Decl):
            value = None
            if isinstance(s.type, ast.ArrayType):
                shape = tuple(int(self._eval(d, scopes)) for g in s.type.dims for d in g)
                dtype = np.int64 if _is_int(s.type.element) else np.float64
                value = np.zeros(shape, dtype=dtype)
            if s.init is not None:
                self._count(s, "stmt")
                value = self._eval(s.init, scopes)
                if _is_int(s.type) and not isinstance(value, bool):
                    value = int(value)
            scopes[-1][s.name] = _Var(value)
            if s.view is not None:
                scopes[-1][s.view.name] = _Var(self._view(value, s.view.type, scopes))
        elif isinstance(s, ast.ViewDecl):
            source = self._lookup(s.source, scopes)
            scopes[-1][s.view.name] = _Var(self._view(source.value, s.view.type, scopes),
                                           source.param)
        elif isinstance(s, ast.Assign):
            self._count(s, "stmt")
            value = self._eval(s.value, scopes)
            if s.op == "=":
                self._store(s.target, value, scopes, mode="w")
            else:
                self._update(s.target, lambda old: _arith(s.op[:-1], old, value), scopes)
        elif isinstance(s, ast.IncDec):
            self._count(s, "stmt")
            self._update(s.target, lambda old: old + (1 if s.op == "++" else -1), scopes)
        elif isinstance(s, ast.CallStmt):
            self._count(s, "stmt")
            self._eval(s.call, scopes)
        elif isinstance(s, ast.Swap):
            self._count(s, "stmt")
            a = self._eval(s.left, scopes, mode="rw")
            b = self._eval(s.right, scopes, mode="rw")
            self._store(s.left, b, scopes, mode="rw", log=False)
            self._store(s.right, a, scopes, mode="rw", log=False)
        elif isinstance(s, ast.Return):
            self._count(s, "stmt")
            raise _Return(self._eval(s.value, scopes) if s.value is not None else None)
        elif isinstance(s, ast.If):
            self._count(s, "if")
            if self._eval(s.cond, scopes):
                self._stmt(s.then, [*scopes, {}])
            elif s.orelse is not None:
                self._stmt(s.orelse, [*scopes, {}])
        elif isinstance(s, ast.Foreach):
            self._count(s, "count")
            n = int(self._eval(s.count, scopes))
            for v in range(n):
                self.loops.append((id(s), v))
                self._stmt(s.body, [*scopes, {s.var: _Var(v)}])
                self.loops.pop()
        elif isinstance(s, ast.For):
            self._for(s, scopes)
        # Barrier: nothing to count

    def _for(self, s: ast.For, scopes: list[dict]) -> None:
        inner = [*scopes, {}]
        self._count(s.init, "init")
        if isinstance(s.init, ast.Decl):
            inner[-1][s.init.name] = _Var(int(self._eval(s.init.init, scopes)))
        else:
            self._store(s.init.target, self._eval(s.init.value, scopes), scopes, mode="w")
        guard = 0
        while True:
            self._count(s.cond, "cond")
            if not self._eval(s.cond, inner):
                break
            self.loops.append((id(s), self._lookup(s.var, inner).value))
            self._stmt(s.body, [*inner, {}])
            self.loops.pop()
            self._count(s.step, "step")
            self._stmt_step(s.step, inner)
            guard += 1
            assert guard < 10**6, "runaway loop in brute-force tracer"

    def _stmt_step(self, step: ast.Stmt, scopes: list[dict]) -> None:
        if isinstance(step, ast.IncDec):
            var = self._lookup(ast.root_name(step.target) or "", scopes)
            var.value += 1 if step.op == "++" else -1
        else:
            assert isinstance(step, ast.Assign)
            value = self._eval(step.value, scopes)
            if step.op != "=":
                value = _arith(step.op[:-1], self._eval(step.target, scopes), value)
            self._store(step.target, value, scopes, mode="w", log=False)

    def _view(self, value: Any, t: ast.ArrayType, scopes: list[dict]) -> Any:
        shape = tuple(int(self._eval(d, scopes)) for g in t.dims for d in g)
        return value.reshape(shape)

    # ------------------------------------------------------------------ expressions
    def _lookup(self, name: str, scopes: list[dict]) -> _Var:
        for scope in reversed(scopes):
            if name in scope:
                return scope[name]
        raise KeyError(name)

    def _place(self, e: ast.Expr, scopes: list[dict]) -> tuple[_Var, tuple[int, ...], str | None]:
        """The variable, element index and field an access expression names."""
        field_name = None
        if isinstance(e, ast.Field):
            field_name = e.name
            e = e.base
        groups = []
        while isinstance(e, ast.Index):
            groups.append(tuple(int(self._eval(i, scopes)) for i in e.indices))
            e = e.base
        assert isinstance(e, ast.Name), e
        var = self._lookup(e.name, scopes)
        index = tuple(i for g in reversed(groups) for i in g)
        return var, index, field_name

    def _log(self, node: ast.Expr, mode: str, index: tuple[int, ...], var: _Var) -> None:
        if self.depth == 0 or self.trace_callees:
            self.trace.accesses.append((id(node), mode, index, tuple(self.loops)))
        if var.param is not None and self.depth == 0:
            if "r" in mode:
                self.trace.read_params.add(var.param)
            if "w" in mode:
                self.trace.written_params.add(var.param)

    def _update(self, target: ast.Expr, fn: Any, scopes: list[dict]) -> Any:
        """Read-modify-write of one place (subscripts evaluated once); returns the old
        value."""
        var, index, _ = self._place(target, scopes)
        if index:
            old = var.value[index]
            old = old.item() if hasattr(old, "item") else old
            var.value[index] = fn(old)
            self._log(target, "rw", index, var)
        else:
            old = var.value
            var.value = fn(old)
            if var.param is not None and self.depth == 0:
                self.trace.read_params.add(var.param)
                self.trace.written_params.add(var.param)
        return old

    def _store(self, target: ast.Expr, value: Any, scopes: list[dict], mode: str,
               log: bool = True) -> None:
        var, index, _ = self._place(target, scopes)
        if index:
            var.value[index] = value
            if log:
                self._log(target, mode, index, var)
        else:
            var.value = value
            if var.param is not None and self.depth == 0:
                self.trace.written_params.add(var.param)

    def _eval(self, e: ast.Expr | None, scopes: list[dict], mode: str = "r",
              log: bool = True) -> Any:
        if isinstance(e, ast.IntLit):
            return e.value
        if isinstance(e, ast.FloatLit):
            return float(e.value)
        if isinstance(e, ast.BoolLit):
            return e.value
        if isinstance(e, ast.Name):
            var = self._lookup(e.name, scopes)
            if var.param is not None and self.depth == 0 and not isinstance(var.value,
                                                                             np.ndarray):
                self.trace.read_params.add(var.param)
            return var.value
        if isinstance(e, ast.HwdConst):
            from mcl.hdl.library import default_library

            q = default_library().get(e.path[0]).value(e.path)
            return int(q.value) if float(q.value).is_integer() else q.value
        if isinstance(e, (ast.Index, ast.Field)):
            var, index, _ = self._place(e, scopes)
            if index and np.ndim(var.value) == len(index):
                if log:
                    self._log(e, mode, index, var)
                value = var.value[index]
                return value.item() if hasattr(value, "item") else value
            if var.param is not None and self.depth == 0:
                self.trace.read_params.add(var.param)
            return var.value[index] if index else var.value
        if isinstance(e, ast.Unary):
            v = self._eval(e.operand, scopes)
            return -v if e.op == "-" else (not v)
        if isinstance(e, ast.Binary):
            if e.op == "&&":
                return bool(self._eval(e.left, scopes)) and bool(self._eval(e.right, scopes))
            if e.op == "||":
                return bool(self._eval(e.left, scopes)) or bool(self._eval(e.right, scopes))
            return _arith(e.op, self._eval(e.left, scopes), self._eval(e.right, scopes))
        if isinstance(e, ast.Call):
            return self._call(e, scopes)
        raise NotImplementedError(type(e).__name__)

    def _call(self, call: ast.Call, scopes: list[dict]) -> Any:
        callee = self._function(call.func)
        if callee is not None:
            local = dict(self._module_env(callee))
            for p, a in zip(callee.params, call.args, strict=True):
                if isinstance(p.type, ast.ArrayType):
                    var, _, _ = self._place(a, scopes)
                    local[p.name] = _Var(var.value)
                else:
                    local[p.name] = _Var(self._eval(a, scopes))
            self.depth += 1
            saved = self.loops
            self.loops = []
            try:
                self._block(callee.body.stmts, [local])
            except _Return as r:
                return r.value
            finally:
                self.depth -= 1
                self.loops = saved
            return None
        if call.func == "atomicAdd":
            target, value = call.args
            amount = self._eval(value, scopes)
            return self._update(target, lambda old: old + amount, scopes)
        args = [self._eval(a, scopes) for a in call.args]
        return _BUILTINS[call.func](*args)


def _is_int(t: Any) -> bool:
    return isinstance(t, ast.Prim) and t.name in ("int", "byte")


def _arith(op: str, a: Any, b: Any) -> Any:
    ints = isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer))
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        if ints:
            q = abs(a) // abs(b)
            return q if (a >= 0) == (b >= 0) else -q
        return a / b
    if op == "%":
        return int(math.fmod(a, b)) if ints else math.fmod(a, b)
    if op == "^":
        return a**b
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b,
            "<<": (a << b) if ints else None, ">>": (a >> b) if ints else None}[op]


_BUILTINS = {
    "sqrt": math.sqrt, "exp": math.exp, "log": math.log, "sin": math.sin, "cos": math.cos,
    "fabs": abs, "abs": abs, "min": min, "max": max, "pow": math.pow,
    "floor": math.floor, "ceil": math.ceil, "toFloat": float, "toDouble": float,
    "toInt": int,
}
