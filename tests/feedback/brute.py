"""A brute-force tracer for MCPL functions: runs a function on concrete inputs, counting
how often every statement, loop header and `if` runs and logging every array element
access with the loop iteration it happened in.

It is deliberately independent of mcl.feedback (no SymPy, no closed forms): the property
tests compare the analyses' symbolic counts, evaluated at the same sizes, with what this
tracer observes. To trace the tiled kernel versions (hundreds of thousands of statements
even at the smallest sizes) in a fraction of a second, the function is compiled to a
Python function with counters, not interpreted node by node. `foreach` runs its units
one after another, which gives the same counts for every kernel whose control flow does
not depend on data written by other units; a foreach whose body holds a `barrier` runs
its units in phases from barrier to barrier (each unit a generator), so the order of the
logged accesses is one the hardware could produce and `Trace.memory` tells which write
every read sees (reuse respecting redefinition, paper 6.3).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mcl.interp.program import is_library_stub
from mcl.mcpl import ast


@dataclass
class _AccessSlot:
    node: int
    mode: str
    loops: tuple[int, ...]
    param: str | None


@dataclass
class Trace:
    counts: dict[tuple[int, str], int] = field(default_factory=dict)  # (id(node), kind) -> n
    slots: list[_AccessSlot] = field(default_factory=list)  # access sites
    # (slot, element index, values of the loops around the site (slot.loops))
    log: list[tuple[int, tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)
    # per log entry: (the array instance accessed, the value read, or written by a store)
    memory: list[tuple[Any, Any]] = field(default_factory=list)
    # where each phase between barriers ends: the length of `log` when all units of the
    # outermost foreach with a barrier reached the next one
    phases: list[int] = field(default_factory=list)

    def per_slot(self) -> Counter:
        if not hasattr(self, "_per_slot"):
            self._per_slot = Counter(slot for slot, _, _ in self.log)
        return self._per_slot

    @property
    def read_params(self) -> set[str]:
        used = self.per_slot()
        return {s.param for k, s in enumerate(self.slots)
                if used[k] and s.param is not None and "r" in s.mode}

    @property
    def written_params(self) -> set[str]:
        used = self.per_slot()
        return {s.param for k, s in enumerate(self.slots)
                if used[k] and s.param is not None and "w" in s.mode}

    def sites(self, node: int) -> list[tuple[_AccessSlot, list[tuple[tuple[int, ...],
                                                                      tuple[int, ...]]]]]:
        """The access sites at AST node `node`, each with its logged (index, loop values);
        the values line up with the site's `loops` (ids of the loop nodes)."""
        if not hasattr(self, "_by_slot"):
            self._by_slot: dict[int, list] = {}
            for slot, index, values in self.log:
                self._by_slot.setdefault(slot, []).append((index, values))
        return [(s, self._by_slot.get(k, [])) for k, s in enumerate(self.slots) if s.node == node]


class Tracer:
    """`Tracer(program, hwd).run(function, args) -> Trace`."""

    def __init__(self, program: Any, hwd: Any):
        self.program = program
        self.hwd = hwd

    def run(self, function: ast.Function, args: dict[str, Any]) -> Trace:
        compiled = _compile(self.program, function)
        counts = [0] * len(compiled.count_slots)
        log: list[tuple[int, tuple[int, ...], tuple[int, ...]]] = []
        memory: list[tuple[Any, Any]] = []
        phases: list[int] = []
        call_args = []
        for p in function.params:
            value = args[p.name]
            call_args.append(value.copy() if isinstance(value, np.ndarray) else value)
        compiled.entry(counts, log, memory, phases, *call_args)
        return Trace(dict(zip(compiled.count_slots, counts, strict=True)),
                     compiled.access_slots, log, memory, phases)


# ----------------------------------------------------------------------------- compiler


@dataclass
class _Compiled:
    entry: Any
    count_slots: list[tuple[int, str]]
    access_slots: list[_AccessSlot]


_CACHE: dict[int, tuple[ast.Function, _Compiled]] = {}


def _compile(program: Any, function: ast.Function) -> _Compiled:
    hit = _CACHE.get(id(function))
    if hit is not None and hit[0] is function:
        return hit[1]
    compiler = _Compiler(program)
    source = compiler.compile(function)
    namespace = dict(_RUNTIME)
    exec(compile(source, f"<brute {function.name}>", "exec"), namespace)  # noqa: S102
    compiled = _Compiled(namespace["F_" + function.name], compiler.count_slots,
                         compiler.access_slots)
    _CACHE[id(function)] = (function, compiled)
    return compiled


class _Var:
    def __init__(self, py: str, type_: Any, param: str | None = None):
        self.py = py
        self.type = type_
        self.param = param


class _Compiler:
    def __init__(self, program: Any):
        self.program = program
        self.count_slots: list[tuple[int, str]] = []
        self.access_slots: list[_AccessSlot] = []
        self.names = itertools.count()
        self.lines: list[str] = []
        self.done: set[str] = set()
        self.pending: list[ast.Function] = []

    # -- driver --------------------------------------------------------------------
    def compile(self, function: ast.Function) -> str:
        self.constants: dict[str, _Var] = {}
        out = []
        for m in _modules(self.program):
            for c in m.constants:
                if c.init is not None:
                    py = f"K_{c.name}"
                    out.append(f"{py} = {self.expr(c.init, [self.constants], None)}")
                    self.constants[c.name] = _Var(py, c.type)
        out += self.function(function, traced=True)
        while self.pending:
            callee = self.pending.pop()
            out += self.function(callee, traced=False)
        return "\n".join(out) + "\n"

    def function(self, f: ast.Function, traced: bool) -> list[str]:
        self.done.add(f.name)
        self.traced = traced
        scope: dict[str, _Var] = {}
        params = []
        for p in f.params:
            var = _Var(self.fresh(p.name), p.type, p.name if traced else None)
            scope[p.name] = var
            params.append(var.py)
        head = ["C", "LOG", "MEM", "PH"] if traced else []
        self.lines = [f"def F_{f.name}({', '.join(head + params)}):"]
        self.loops: list[tuple[int, str]] = []
        self.phased: list[str | None] = []  # groups of the foreach statements around
        self.block(f.body.stmts, [self.constants, scope], 1)
        self.lines.append("    return None")
        return self.lines

    def fresh(self, name: str) -> str:
        return f"v{next(self.names)}_{name}"

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def count(self, depth: int, node: Any, kind: str) -> None:
        if self.traced:
            self.count_slots.append((id(node), kind))
            self.emit(depth, f"C[{len(self.count_slots) - 1}] += 1")

    def access(self, node: Any, mode: str, var: _Var) -> str:
        """A slot for one access site; returns the log call's loop-values tuple."""
        self.access_slots.append(_AccessSlot(id(node), mode, tuple(i for i, _ in self.loops),
                                             var.param))
        values = "".join(f"{py}, " for _, py in self.loops)
        return f"{len(self.access_slots) - 1}, ({values})"

    # -- statements ----------------------------------------------------------------
    def block(self, stmts: tuple[ast.Stmt, ...], scopes: list[dict], depth: int) -> None:
        scopes = [*scopes, {}]
        self.emit(depth, "pass")
        for s in stmts:
            self.stmt(s, scopes, depth)

    def stmt(self, s: ast.Stmt, scopes: list[dict], depth: int) -> None:
        if isinstance(s, ast.Block):
            self.block(s.stmts, scopes, depth)
        elif isinstance(s, ast.Decl):
            self.decl(s, scopes, depth)
        elif isinstance(s, ast.ViewDecl):
            source = _lookup(s.source, scopes)
            var = _Var(self.fresh(s.view.name), s.view.type, source.param)
            self.emit(depth, f"{var.py} = _view({source.py}, {self.shape(s.view.type, scopes)})")
            scopes[-1][s.view.name] = var
        elif isinstance(s, ast.Assign):
            self.count(depth, s, "stmt")
            value = self.expr(s.value, scopes, None)
            if s.op == "=":
                self.store(s.target, value, scopes, depth)
            else:
                op = s.op[:-1]
                self.update(s.target, lambda old: f"_arith({op!r}, {old}, {value})", scopes,
                            depth)
        elif isinstance(s, ast.IncDec):
            self.count(depth, s, "stmt")
            delta = "1" if s.op == "++" else "-1"
            self.update(s.target, lambda old: f"{old} + {delta}", scopes, depth)
        elif isinstance(s, ast.CallStmt):
            self.count(depth, s, "stmt")
            self.emit(depth, self.call(s.call, scopes, depth))
        elif isinstance(s, ast.Swap):
            self.count(depth, s, "stmt")
            tmp = self.fresh("swap")
            self.emit(depth, f"{tmp} = {self.expr(s.left, scopes, 'rw')}")
            self.store(s.left, self.expr(s.right, scopes, "rw"), scopes, depth, log=False)
            self.store(s.right, tmp, scopes, depth, log=False)
        elif isinstance(s, ast.Return):
            self.count(depth, s, "stmt")
            value = self.expr(s.value, scopes, None) if s.value is not None else "None"
            self.emit(depth, f"return {value}")
        elif isinstance(s, ast.If):
            self.count(depth, s, "if")
            self.emit(depth, f"if {self.expr(s.cond, scopes, None)}:")
            self.block((s.then,), scopes, depth + 1)
            if s.orelse is not None:
                self.emit(depth, "else:")
                self.block((s.orelse,), scopes, depth + 1)
        elif isinstance(s, ast.Foreach):
            self.count(depth, s, "count")
            var = _Var(self.fresh(s.var), ast.Prim("int"))
            count = f"range(int({self.expr(s.count, scopes, None)}))"
            self.loops.append((id(s), var.py))
            if self.traced and _has_barrier(s.body):
                self.phased_foreach(s, var, count, scopes, depth)
            else:
                self.emit(depth, f"for {var.py} in {count}:")
                self.block((s.body,), [*scopes, {s.var: var}], depth + 1)
            self.loops.pop()
        elif isinstance(s, ast.For):
            self.for_(s, scopes, depth)
        elif isinstance(s, ast.Barrier) and self.phased:
            self.emit(depth, "yield")

    def phased_foreach(self, s: ast.Foreach, var: _Var, count: str, scopes: list[dict],
                       depth: int) -> None:
        """Units as generators that stop at each barrier. A foreach inside a phased one
        passes each phase up instead of finishing its units first: over the same
        par_group it is another dimension of the same units (Fig. 2), and over a smaller
        one (threads inside warps) its units meet the barrier with all of the block's,
        so a warp's threads must not run past a barrier before the other warps reach it
        (they would read shared memory the others have not written yet)."""
        unit = self.fresh("unit")
        self.emit(depth, f"def {unit}({var.py}):")
        self.phased.append(s.group)
        self.block((s.body,), [*scopes, {s.var: var}], depth + 1)
        self.phased.pop()
        self.emit(depth + 1, "yield from ()")
        units = f"[{unit}({var.py}) for {var.py} in {count}]"
        if self.phased:
            self.emit(depth, f"yield from _phases({units})")
        else:
            self.emit(depth, f"for _ in _phases({units}):")
            self.emit(depth + 1, "PH.append(len(LOG))")

    def decl(self, s: ast.Decl, scopes: list[dict], depth: int) -> None:
        var = _Var(self.fresh(s.name), s.type)
        if isinstance(s.type, ast.ArrayType):
            dtype = "np.int64" if _integral(s.type.element) else "np.float64"
            self.emit(depth, f"{var.py} = np.zeros({self.shape(s.type, scopes)}, dtype={dtype})")
        elif s.init is not None:
            self.count(depth, s, "stmt")
            self.emit(depth, f"{var.py} = {_convert(s.type, self.expr(s.init, scopes, None))}")
        else:
            self.emit(depth, f"{var.py} = 0")
        scopes[-1][s.name] = var
        if s.view is not None:
            view = _Var(self.fresh(s.view.name), s.view.type)
            self.emit(depth, f"{view.py} = _view({var.py}, {self.shape(s.view.type, scopes)})")
            scopes[-1][s.view.name] = view

    def for_(self, s: ast.For, scopes: list[dict], depth: int) -> None:
        inner = [*scopes, {}]
        self.count(depth, s.init, "init")
        if isinstance(s.init, ast.Decl):
            var = _Var(self.fresh(s.init.name), s.init.type)
            self.emit(depth, f"{var.py} = "
                      f"{_convert(s.init.type, self.expr(s.init.init, scopes, None))}")
            inner[-1][s.init.name] = var
        else:
            self.store(s.init.target, self.expr(s.init.value, scopes, None), scopes, depth)
            var = _lookup(s.var, scopes)
        self.emit(depth, "while True:")
        self.count(depth + 1, s.cond, "cond")
        self.emit(depth + 1, f"if not ({self.expr(s.cond, inner, None)}):")
        self.emit(depth + 2, "break")
        self.loops.append((id(s), var.py))
        self.block((s.body,), inner, depth + 1)
        self.loops.pop()
        self.count(depth + 1, s.step, "step")
        step = s.step
        if isinstance(step, ast.IncDec):
            self.emit(depth + 1, f"{var.py} += {1 if step.op == '++' else -1}")
        else:
            value = self.expr(step.value, inner, None)
            if step.op != "=":
                value = f"_arith({step.op[:-1]!r}, {var.py}, {value})"
            self.emit(depth + 1, f"{var.py} = {value}")

    def shape(self, t: ast.ArrayType, scopes: list[dict]) -> str:
        dims = [f"int({self.expr(d, scopes, None)})" for g in t.dims for d in g]
        return "(" + "".join(d + ", " for d in dims) + ")"

    # -- places ----------------------------------------------------------------------
    def place(self, e: ast.Expr, scopes: list[dict]) -> tuple[_Var, list[str]]:
        if isinstance(e, ast.Field):
            raise NotImplementedError("struct fields are not traced")
        groups = []
        while isinstance(e, ast.Index):
            groups.append([self.expr(i, scopes, None) for i in e.indices])
            e = e.base
        assert isinstance(e, ast.Name), e
        return _lookup(e.name, scopes), [i for g in reversed(groups) for i in g]

    def store(self, target: ast.Expr, value: str, scopes: list[dict], depth: int,
              log: bool = True) -> None:
        var, index = self.place(target, scopes)
        if index:
            idx = self.fresh("idx")
            self.emit(depth, f"{idx} = ({', '.join(index)},)")
            self.emit(depth, f"{var.py}[{idx}] = {value}")
            if log and self.traced:
                self.emit(depth, f"LOG.append(({self._log_args(target, 'w', var, idx)}))")
                self.emit(depth, f"MEM.append(({var.py}, {var.py}[{idx}].item()))")
        else:
            self.emit(depth, f"{var.py} = {_convert(var.type, value)}")

    def update(self, target: ast.Expr, fn: Any, scopes: list[dict], depth: int) -> str:
        """Read-modify-write with the subscripts evaluated once."""
        var, index = self.place(target, scopes)
        old = self.fresh("old")
        if index:
            idx = self.fresh("idx")
            self.emit(depth, f"{idx} = ({', '.join(index)},)")
            self.emit(depth, f"{old} = {var.py}[{idx}].item()")
            self.emit(depth, f"{var.py}[{idx}] = {fn(old)}")
            if self.traced:
                self.emit(depth, f"LOG.append(({self._log_args(target, 'rw', var, idx)}))")
                self.emit(depth, f"MEM.append(({var.py}, {old}))")
        else:
            self.emit(depth, f"{old} = {var.py}")
            self.emit(depth, f"{var.py} = {_convert(var.type, fn(old))}")
        return old

    def _log_args(self, node: Any, mode: str, var: _Var, idx: str) -> str:
        slot = self.access(node, mode, var)
        number, values = slot.split(", ", 1)
        return f"{number}, {idx}, {values}"

    # -- expressions -------------------------------------------------------------------
    def expr(self, e: ast.Expr | None, scopes: list[dict], mode: str | None) -> str:
        if isinstance(e, ast.IntLit):
            return repr(e.value)
        if isinstance(e, ast.FloatLit):
            return repr(float(e.value))
        if isinstance(e, ast.BoolLit):
            return "True" if e.value else "False"
        if isinstance(e, ast.Name):
            return _lookup(e.name, scopes).py
        if isinstance(e, ast.HwdConst):
            from mcl.hdl.library import default_library

            q = default_library().get(e.path[0]).value(e.path)
            return repr(int(q.value) if float(q.value).is_integer() else q.value)
        if isinstance(e, (ast.Index, ast.Field)):
            var, index = self.place(e, scopes)
            rank = _rank(var.type)
            if index and len(index) == rank:
                if not self.traced:
                    return f"{var.py}[({', '.join(index)},)].item()"
                idx = f"({', '.join(index)},)"
                return f"_ld(LOG, MEM, {var.py}, {self._log_args(e, mode or 'r', var, idx)})"
            return f"{var.py}[({', '.join(index)},)]" if index else var.py
        if isinstance(e, ast.Unary):
            inner = self.expr(e.operand, scopes, None)
            return f"(-{inner})" if e.op == "-" else f"(not {inner})"
        if isinstance(e, ast.Binary):
            left, right = self.expr(e.left, scopes, None), self.expr(e.right, scopes, None)
            if e.op == "&&":
                return f"({left} and {right})"
            if e.op == "||":
                return f"({left} or {right})"
            if e.op in _NATIVE:  # same meaning in Python
                return f"({left} {_NATIVE[e.op]} {right})"
            return f"_arith({e.op!r}, {left}, {right})"
        if isinstance(e, ast.Call):
            return self.call(e, scopes, 0)
        raise NotImplementedError(type(e).__name__)

    def call(self, call: ast.Call, scopes: list[dict], depth: int) -> str:
        callee = _function(self.program, call.func)
        # a library function whose body only states its signature (mcl_builtin_read/write)
        # is computed natively, as the interpreter does (mcl.interp.program.is_library_stub)
        if callee is not None and not is_library_stub(callee):
            if callee.name not in self.done and callee not in self.pending:
                self.pending.append(callee)
            args = []
            for p, a in zip(callee.params, call.args, strict=True):
                if isinstance(p.type, ast.ArrayType):
                    args.append(self.place(a, scopes)[0].py)
                else:
                    args.append(self.expr(a, scopes, None))
            return f"F_{callee.name}({', '.join(args)})"
        if call.func == "atomicAdd":
            target, value = call.args
            amount = self.expr(value, scopes, None)
            return self.update(target, lambda old: f"{old} + {amount}", scopes, depth)
        if call.func in ("mcl_builtin_read", "mcl_builtin_write"):
            return "None"
        args = ", ".join(self.expr(a, scopes, None) for a in call.args)
        return f"_BUILTINS[{call.func!r}]({args})"


def _modules(program: Any) -> list[ast.Module]:
    if isinstance(program, ast.Module):
        return [program]
    return list(program.modules.values())


def _function(program: Any, name: str) -> ast.Function | None:
    for m in _modules(program):
        for f in m.functions:
            if f.name == name:
                return f
    return None


def _has_barrier(s: Any) -> bool:
    if isinstance(s, ast.Barrier):
        return True
    if isinstance(s, ast.Block):
        return any(_has_barrier(x) for x in s.stmts)
    if isinstance(s, ast.If):
        return _has_barrier(s.then) or (s.orelse is not None and _has_barrier(s.orelse))
    if isinstance(s, (ast.For, ast.Foreach)):
        return _has_barrier(s.body)
    return False


def _lookup(name: str, scopes: list[dict]) -> _Var:
    for scope in reversed(scopes):
        if name in scope:
            return scope[name]
    raise KeyError(name)


def _rank(t: Any) -> int:
    return t.rank if isinstance(t, ast.ArrayType) else 0


def _integral(t: Any) -> bool:
    return isinstance(t, ast.Prim) and t.name in ("int", "byte")


def _convert(t: Any, value: str) -> str:
    if _integral(t):
        return f"int({value})"
    if isinstance(t, ast.Prim) and t.name in ("float", "double"):
        return f"float({value})"
    return value


# ----------------------------------------------------------------------------- runtime


def _ld(log: list, memory: list, array: Any, slot: int, index: tuple[int, ...],
        loops: tuple) -> Any:
    log.append((slot, index, loops))
    value = array[index].item()
    memory.append((array, value))
    return value


_DONE = object()


def _phases(units: list[Any]) -> Any:
    """Advance every unit to its next barrier, phase after phase (a generator itself: a
    foreach nested in one over the same par_group passes each phase up)."""
    while units:
        units = [u for u in units if next(u, _DONE) is not _DONE]
        if units:
            yield


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
    if op == "<<":
        return a << b
    if op == ">>":
        return a >> b
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b,
            "!=": a != b}[op]


_BUILTINS = {
    "sqrt": math.sqrt, "exp": math.exp, "log": math.log, "sin": math.sin, "cos": math.cos,
    "exp2": lambda x: 2.0 ** x, "log2": math.log2, "log10": math.log10, "tanh": math.tanh,
    "rsqrt": lambda x: 1.0 / math.sqrt(x), "tan": math.tan, "atan": math.atan,
    "fabs": abs, "abs": abs, "min": min, "max": max, "pow": math.pow,
    "floor": math.floor, "ceil": math.ceil, "toFloat": float, "toDouble": float,
    "toInt": int,
}

_NATIVE = {"+": "+", "-": "-", "*": "*", "<": "<", "<=": "<=", ">": ">", ">=": ">=",
           "==": "==", "!=": "!=", "<<": "<<", ">>": ">>"}

def _view(storage: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The first elements of `storage` in another shape: a view may need fewer elements
    than the storage holds (docs/mcpl.md, views), e.g. `a as float[n, n / 4][4]` when 4
    does not divide n, which a kernel reads only where it does."""
    return storage.reshape(-1)[:int(np.prod(shape))].reshape(shape)


_RUNTIME = {"np": np, "_view": _view, "_ld": _ld, "_arith": _arith, "_BUILTINS": _BUILTINS,
            "_phases": _phases}
