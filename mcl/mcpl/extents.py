"""Array accesses outside their extents, for given values of the parameters.

`mcl run --target` allocates each array from its declared extent and launches the
generated kernel; OpenCL does not check an index, so `a[i]` for i up to 999 on
`float[4] a` writes past the buffer and corrupts the host's heap (the driver's memory on
a CPU device). The interpreter finds it during the run; this check finds it before
anything is allocated, from the kernel's text and the sizes, and `mcl check -D` reports
the same.

For every access of an array whose extents are known numbers, the check looks for a
*witness*: values of the foreach indices and loop variables around the access, each at
the first or last value its loop gives it (outer loops first, so inner bounds that
depend on outer variables are honoured), that satisfy every condition around the access
and put a subscript outside the array. Only a witness is reported, with its values, so
the check never refuses a correct kernel; what it cannot evaluate (data-dependent values,
variables assigned after their declaration, code after a `return`) it leaves to the
interpreter. The search is bounded: at most 2^MAX_DEPTH points per access and
MAX_POINTS per function.

`mcl check` runs the same search with no parameter known (`constant_extent_errors`): the
arrays whose extents are constants (`float[4] t`, `float[N] t` for a program constant)
against loops whose ends are constants (`for (int q = 0; q <= 4; q++) t[q] = ...` reaches
t[4] in every unit that runs it). A foreach index whose count is a size is unknown there
(a foreach runs at least one unit, so what does not depend on the index still happens);
a for loop or a condition the search cannot evaluate gives no witness. With values
(`-D`), an access the constant search already reports is not reported again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Union

from mcl.diagnostics import Diagnostic, error
from mcl.mcpl import ast
from mcl.mcpl import operators as ops
from mcl.mcpl.constfold import FoldError, fold_binary, fold_unary
from mcl.mcpl.evaluate import Evaluator, NotEvaluable
from mcl.mcpl.printer import print_expr
from mcl.mcpl.varying import assigned_names
from mcl.mcpl.visitor import unknown_node

MAX_DEPTH = 10
MAX_POINTS = 200_000

Value = Union[int, float, bool, None]


@dataclass(frozen=True)
class _Loop:
    """A loop around an access: its variable, start, bound and step."""

    var: str
    start: ast.Expr | None  # None for a foreach: 0 .. count - 1
    bound: ast.Expr
    op: str  # "<", "<=", ">", ">=" (a foreach: "<")
    step: int


@dataclass(frozen=True)
class _Let:
    """A scalar's value at an access (None where the check cannot know it)."""

    name: str
    value: ast.Expr | None  # None: a value the check cannot know


@dataclass(frozen=True)
class _Guard:
    """A condition around an access, and whether it holds there."""

    cond: ast.Expr
    holds: bool


Frame = Union[_Loop, _Let, _Guard]


def extent_errors(function: ast.Function, values: Mapping[str, object]) -> list[Diagnostic]:
    """An error for each access of `function` that leaves its array for some units, with
    the parameters at `values`."""
    params: dict[str, Value] = {
        p.name: v for p in function.params
        if isinstance(v := values.get(p.name), int) and not isinstance(v, bool)
    }
    if not params:
        return []
    search = _Search(params, assigned_names(function.body))
    arrays = {p.name: p.type for p in function.params if isinstance(p.type, ast.ArrayType)}
    search.block(function.body, [], arrays)
    constant = {d.span for d in constant_extent_errors(function, {})}
    return [d for d in search.found if d.span not in constant]


def constant_extent_errors(function: ast.Function, constants: Mapping[str, int]
                           ) -> list[Diagnostic]:
    """An error (`mcpl-index-range`) for each access of an array of constant extents in
    `function` that leaves it whatever the parameters are; `constants`: the program's
    integer constants."""
    known: dict[str, Value] = {k: v for k, v in constants.items() if _is_int(v)}
    for p in function.params:
        known.pop(p.name, None)  # (a parameter hides a constant of its name)
    search = _Search(known, assigned_names(function.body), constant_only=True)
    arrays = {p.name: p.type for p in function.params if isinstance(p.type, ast.ArrayType)
              and search.constant_extents(p.type)}
    search.block(function.body, [], arrays)
    return search.found


class _Search:
    def __init__(self, params: dict[str, Value], reassigned: set[str],
                 constant_only: bool = False) -> None:
        self.params = params
        self.reassigned = reassigned
        # no parameter known: only arrays of constant extents, a foreach index unknown
        self.constant_only = constant_only
        self.found: list[Diagnostic] = []
        self.points = 0
        self.loops: set[str] = set()  # the loop variables and foreach indices seen

    def constant_extents(self, declared: ast.ArrayType) -> bool:
        return len(declared.dims) == 1 and all(_is_int(_eval(d, self.params))
                                               for d in declared.dims[0])

    # -- the statements around each access --------------------------------------------
    def block(self, s: ast.Stmt | None, frames: list[Frame],
              arrays: dict[str, ast.ArrayType]) -> bool:
        """Walk `s`; False once code after it may not run for every unit (a return)."""
        match s:
            case None:
                return True
            case ast.Block():
                frames, arrays = list(frames), dict(arrays)
                for stmt in s.stmts:
                    if not self.block(stmt, frames, arrays):
                        return False
                    if isinstance(stmt, ast.Decl):
                        self.declare(stmt, frames, arrays)
                return True
            case ast.Foreach():
                self.accesses(s.count, frames, arrays)
                self.loops.add(s.var)
                loop = _Loop(s.var, None, s.count, "<", 1)
                self.block(s.body, [*frames, loop], arrays)
                return True
            case ast.For():
                return self.loop(s, frames, arrays)
            case ast.If():
                self.accesses(s.cond, frames, arrays)
                then = self.block(s.then, [*frames, _Guard(s.cond, True)], arrays)
                orelse = self.block(s.orelse, [*frames, _Guard(s.cond, False)], arrays)
                return then and orelse
            case ast.Return():
                self.accesses(s.value, frames, arrays)
                return False
            case (ast.Decl() | ast.ViewDecl() | ast.Assign() | ast.IncDec() | ast.CallStmt()
                  | ast.Swap() | ast.Barrier()):
                # Straight-line statements: the accesses in their expressions (types and
                # views name sizes, not accesses).
                for child in ast.children(s):
                    if isinstance(child, ast.ArrayType | ast.Prim | ast.NamedType | ast.View):
                        continue
                    self.accesses(child, frames, arrays)
                return True
            case _:
                unknown_node(s, "the extents check")

    def declare(self, d: ast.Decl, frames: list[Frame],
                arrays: dict[str, ast.ArrayType]) -> None:
        arrays.pop(d.name, None)
        if isinstance(d.type, ast.ArrayType) and d.view is None and (
                not self.constant_only or self.constant_extents(d.type)):
            arrays[d.name] = d.type
        known = d.init is not None and d.name not in self.reassigned
        frames.append(_Let(d.name, d.init if known else None))

    def loop(self, s: ast.For, frames: list[Frame], arrays: dict[str, ast.ArrayType]) -> bool:
        init = s.init
        start = init.init if isinstance(init, ast.Decl) else init.value
        step = _step(s.step, s.var)
        cond = s.cond
        shape: Frame = _Let(s.var, None)
        if (start is not None and step and isinstance(cond, ast.Binary)
                and cond.op in ("<", "<=", ">", ">=") and isinstance(cond.left, ast.Name)
                and cond.left.name == s.var and s.var not in assigned_names(s.body)
                and (step > 0) == (cond.op in ("<", "<="))):
            shape = _Loop(s.var, start, cond.right, cond.op, step)
        self.loops.add(s.var)
        self.accesses(start, frames, arrays)
        return self.block(s.body, [*frames, shape], arrays)

    # -- accesses ---------------------------------------------------------------------
    def accesses(self, e: object, frames: list[Frame], arrays: dict[str, ast.ArrayType]
                 ) -> None:
        if e is None or not arrays:
            return
        for node in ast.walk(e):
            if (isinstance(node, ast.Index) and isinstance(node.base, ast.Name)
                    and node.base.name in arrays):
                declared = arrays[node.base.name]
                if len(declared.dims) == 1 and len(declared.dims[0]) == len(node.indices):
                    self.access(node, declared.dims[0], frames)

    def access(self, node: ast.Index, dims: tuple[ast.Expr, ...], frames: list[Frame]) -> None:
        sizes = [_eval(d, self.params) for d in dims]
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in sizes):
            return
        if sum(isinstance(f, _Loop) for f in frames) > MAX_DEPTH:
            return
        extents = [n for n in sizes if isinstance(n, int)]  # all of them, checked above
        for env in self.points_of(frames, dict(self.params)):
            for index, size in zip(node.indices, extents, strict=True):
                value = _eval(index, env)
                if isinstance(value, int) and not isinstance(value, bool) \
                        and not 0 <= value < size:
                    named = {n.name for d in dims for n in ast.walk(d) if isinstance(n, ast.Name)}
                    for f in frames:
                        named |= _names(f)
                    self.report(node, index, value, size, env, named)
                    return

    def points_of(self, frames: list[Frame], env: dict[str, Value]) -> Iterator[dict]:
        """The points (outer variables first, each at an end of its range) that satisfy
        every condition of `frames`."""
        if not frames:
            yield env
            return
        if self.points >= MAX_POINTS:
            return
        self.points += 1
        frame, rest = frames[0], frames[1:]
        if isinstance(frame, _Let):
            value = _eval(frame.value, env) if frame.value is not None else None
            yield from self.points_of(rest, {**env, frame.name: value})
        elif isinstance(frame, _Guard):
            if _eval(frame.cond, env) is frame.holds:
                yield from self.points_of(rest, env)
        else:
            ends = _ends(frame, env)
            if not ends and frame.start is None and self.constant_only:
                # a foreach over a size: it runs, its index unknown
                yield from self.points_of(rest, {**env, frame.var: None})
            for value in ends:
                yield from self.points_of(rest, {**env, frame.var: value})

    def report(self, node: ast.Index, index: ast.Expr, value: int, size: int,
               env: Mapping[str, Value], named: set[str]) -> None:
        sizes = sorted(name for name in named if name in self.params)
        used = sorted({n.name for n in ast.walk(index) if isinstance(n, ast.Name)
                       and n.name not in self.params and env.get(n.name) is not None})
        if self.constant_only:
            if _is_int(_eval(index, {k: v for k, v in env.items() if k not in self.loops})):
                return  # the same for every iteration: the checker's constant index
            at = ", ".join(f"{name} = {env[name]}" for name in used
                           if not isinstance(index, ast.Name))
            self.found.append(error(
                "mcpl-index-range",
                f"'{print_expr(index)}' reaches {value}{f' (with {at})' if at else ''}, "
                f"outside '{print_expr(node.base)}' ({size} element{'s' if size != 1 else ''} "
                f"in this dimension, 0 .. {size - 1}), whatever the parameters are",
                index.span or node.span,
                "check the loop's bounds against the array's size",
            ))
            return
        at = ", ".join(f"{name} = {env[name]}" for name in sizes)
        if used:
            at += (" and " if at else "") + ", ".join(f"{name} = {env[name]}" for name in used)
        self.found.append(error(
            "values-index-range",
            f"with {at}, '{print_expr(index)}' is {value}, outside "
            f"'{print_expr(node.base)}' ({size} element{'s' if size != 1 else ''} in this "
            "dimension): the access would read or write memory that is not the array's",
            index.span or node.span,
            "check the array's size against the units and loops that index it; "
            "`mcl run --interp` shows every access",
        ))


def _ends(loop: _Loop, env: Mapping[str, Value]) -> list[int]:
    """The first and last value of a loop's variable at `env`, [] when it runs none."""
    bound = _eval(loop.bound, env)
    start = 0 if loop.start is None else _eval(loop.start, env)
    if not (_is_int(bound) and _is_int(start)):
        return []
    assert isinstance(bound, int) and isinstance(start, int)
    if loop.start is None:  # a foreach: units 0 .. count - 1
        return [0, bound - 1] if bound >= 1 else []
    last_ok = {"<": bound - 1, "<=": bound, ">": bound + 1, ">=": bound}[loop.op]
    span = last_ok - start
    if span * loop.step < 0:
        return []  # runs no iteration
    last = start + loop.step * (span // loop.step)
    return [start, last] if last != start else [start]


def _step(step: ast.IncDec | ast.Assign, var: str) -> int:
    """The constant step of a loop's variable (0 when it is not one)."""
    if not (isinstance(step.target, ast.Name) and step.target.name == var):
        return 0
    if isinstance(step, ast.IncDec):
        return 1 if step.op == "++" else -1
    if step.op in ("+=", "-=") and isinstance(step.value, ast.IntLit) and step.value.value:
        return step.value.value if step.op == "+=" else -step.value.value
    return 0


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class _IndexValues:
    """The domain of the search (`mcl.mcpl.evaluate`): ints and bools with C's integer
    semantics, the folding's operators (`mcl.mcpl.constfold`: a division by zero or an
    int overflow has no value); a float, a shift or bit operation (which wrap in practice)
    and a call other than `min` and `max` of two ints have no value either."""

    def integer(self, value: int) -> Value:
        return value

    def floating(self, value: float) -> Value:
        raise NotEvaluable("not an index")

    def boolean(self, value: bool) -> Value:
        return value

    def unary(self, op: str, operand: Value) -> Value:
        if op == "!" and isinstance(operand, bool):
            return not operand
        return self.integer_result(fold_unary(op, operand) if _is_int(operand) else None)

    def binary(self, op: str, left: Value, right: Value) -> Value:
        if not (_is_int(left) and _is_int(right)):
            raise NotEvaluable("not an index")
        if op in ops.COMPARISONS:
            return bool(ops.COMPARISONS[op](left, right))
        return self.integer_result(fold_binary(op, left, right))

    def logical(self, op: str, left: Value, right: Callable[[], Value]) -> Value:
        if not isinstance(left, bool):
            raise NotEvaluable("not a condition")
        if left is (op == "||"):
            return left  # C's short circuit
        value = right()
        if not isinstance(value, bool):
            raise NotEvaluable("not a condition")
        return value

    def call(self, name: str, args: list[Value]) -> Value:
        if name in ("min", "max") and len(args) == 2 and all(_is_int(a) for a in args):
            # _is_int said both arguments are ints; `Value` is a wider union
            return (min if name == "min" else max)(args)  # type: ignore[type-var]
        raise NotEvaluable(f"cannot compute {name}(...) here")

    @staticmethod
    def integer_result(value: object) -> Value:
        if not _is_int(value):
            raise NotEvaluable("not an index")
        # _is_int said `value` is an int, a `Value`
        return value  # type: ignore[return-value]


class _AtPoint(Evaluator[Value, Mapping[str, Value]]):
    """Expressions at one point of the search: a name is its value there (None: the
    search cannot know it), anything else (an element, a field, a description constant)
    unknown."""

    def name(self, e: ast.Name, env: Mapping[str, Value]) -> Value:
        value = env.get(e.name)
        if value is None:
            raise NotEvaluable(f"'{e.name}' is not known here")
        return value


_AT_POINT = _AtPoint(_IndexValues())


def _eval(e: ast.Expr | None, env: Mapping[str, Value]) -> Value:
    """The value of `e` at `env` with C's integer semantics; None when unknown."""
    if e is None:
        return None
    try:
        return _AT_POINT.value(e, env)
    except (NotEvaluable, FoldError, RecursionError):
        return None


def index_value(e: ast.Expr | None, env: Mapping[str, int]) -> Value:
    """The value of integer expression `e` with the names of `env` known (C's integer
    semantics, as the search evaluates a subscript); None when it has none."""
    return _eval(e, env)


def _names(frame: Frame) -> set[str]:
    exprs = ([frame.start, frame.bound] if isinstance(frame, _Loop) else
             [frame.value] if isinstance(frame, _Let) else [frame.cond])
    return {n.name for e in exprs if e is not None for n in ast.walk(e)
            if isinstance(n, ast.Name)}
