"""Compile MCPL statements and whole functions into Python closures.

Every statement becomes `run(frame)`. A statement that can reach a barrier resolved by an
enclosing foreach also gets `gen(frame)`, a generator function that yields a
`BarrierToken` at each such barrier (`mcl.interp.lockstep`). Which statements need the
generator form is known statically, so barrier-free code — nearly all of it — runs as
plain closures at full speed, and only the units of a foreach whose body synchronises run
as generators, phase by phase.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mcl.diagnostics import Span
from mcl.identity import Ref
from mcl.interp.compile_expr import (
    PRIM,
    CExpr,
    Compiling,
    ExprCompiler,
    Fn,
    Frame,
    Var,
    element_reader,
    fail,
    with_cast,
)
from mcl.interp.lockstep import BarrierToken, ForeachInfo, lockstep, resolving_root
from mcl.interp.progress import listener
from mcl.interp.values import POISON, StructValue, scalar_name
from mcl.mcpl import ast
from mcl.mcpl import types as T
from mcl.mcpl.operators import COMPOUND
from mcl.translate.unit_limits import UnitLimit, unit_limit

Gen = Callable[[Frame], Iterator[BarrierToken]]


class ReturnSignal(Exception):
    """`return e;` unwinds to the function call (or ends the current foreach unit)."""

    def __init__(self, value: object):
        self.value = value


@dataclass
class CStmt:
    """A compiled statement. `open_roots` holds the root foreach statements outside
    this statement that resolve barriers inside it; `gen` is set exactly when it is
    non-empty."""

    run: Fn
    gen: Gen | None = None
    open_roots: frozenset[Ref[ast.Foreach]] = field(default_factory=frozenset)


def _unreachable(_f: Frame) -> None:
    raise AssertionError("a statement that waits at barriers ran outside lock-step")


def _sequence(parts: list[CStmt]) -> CStmt:
    """Statements in order (a block, or a declaration followed by its view)."""
    if len(parts) == 1:
        return parts[0]
    open_roots = frozenset().union(*(p.open_roots for p in parts))
    runs = [p.run for p in parts]
    if len(runs) == 2:
        r0, r1 = runs

        def run2(f: Frame) -> None:
            r0(f)
            r1(f)

        run: Fn = run2
    else:

        def run(f: Frame) -> None:
            for r in runs:
                r(f)

    if not open_roots:
        return CStmt(run)
    steps = [(p.gen, p.run) for p in parts]

    def gen(f: Frame) -> Iterator[BarrierToken]:
        for g, r in steps:
            if g is not None:
                yield from g(f)
            else:
                r(f)

    return CStmt(_unreachable, gen, open_roots)


class FunctionCompiler(ExprCompiler):
    """Compiles one function body (statements on top of `ExprCompiler`'s expressions)."""

    def __init__(self, engine: Compiling, function: ast.Function):
        super().__init__(engine, function)
        self.foreach_stack: list[ForeachInfo] = []
        self.hwd = engine.hwd(function.hwd)

    # -- statements -------------------------------------------------------------------
    def stmt(self, s: ast.Stmt) -> CStmt:
        return self.visit(s)

    def visit_Block(self, s: ast.Block) -> CStmt:
        parts = [self.stmt(x) for x in s.stmts]
        return _sequence(parts) if parts else CStmt(lambda _f: None)

    def visit_Decl(self, s: ast.Decl) -> CStmt:
        make = self.allocator(s.type, s.span)
        init: CExpr | None = None
        if s.init is not None:
            init = self.expr(s.init)
        var = self.declare(s)
        slot = var.slot
        parts = []
        if make is None:  # a scalar
            if init is None:
                poison = POISON.get(scalar_name(s.type) or "")
                parts.append(CStmt(lambda f: f.__setitem__(slot, poison)))
            else:
                value = with_cast(init, var.type, s.init, s.span)
                if value.is_const:
                    const = value.const
                    parts.append(CStmt(lambda f: f.__setitem__(slot, const)))
                else:
                    fn = value.fn

                    def assign(f: Frame) -> None:
                        f[slot] = fn(f)

                    parts.append(CStmt(assign))
        else:
            store = self._aggregate_store(var.type, init, s.span)

            def declare(f: Frame) -> None:
                f[slot] = value = make(f)
                if store is not None:
                    store(value, f)

            parts.append(CStmt(declare))
        if s.view is not None:
            parts.append(self._bind_view(var, s.view))
        return _sequence(parts)

    def _aggregate_store(
        self, t: T.VType, init: CExpr | None, span: Span | None
    ) -> Callable[[Any, Frame], None] | None:
        """For `Complex u = v;` or `float[n] b = a;`: copy the initial value into the new
        storage (C copies structs; arrays are copied element by element)."""
        if init is None:
            return None
        fn = init.fn
        if isinstance(t, T.Array):
            return lambda target, f: _copy_array(target, fn(f), span)
        return lambda target, f: _copy_struct(target, fn(f))

    def _bind_view(self, source: Var, view: ast.View, part: ast.Expr | None = None) -> CStmt:
        """Bind `view` to the storage of `source`, or of the part of it `part` denotes (an
        element or a field, evaluated here: its subscripts' values now)."""
        load = self.loader(source) if part is None else self.expr(part).fn
        shape = self.shape_fn(view.type)
        var = self.declare(view)
        slot, span = var.slot, view.span

        def bind(f: Frame) -> None:
            f[slot] = reshape_view(load(f), shape(f), span, view.name)

        return CStmt(bind)

    def visit_ViewDecl(self, s: ast.ViewDecl) -> CStmt:
        source = self.var(s)
        if source is None:  # a constant: the checker allows views of arrays only
            raise fail("type", f"'{s.source}' is not an array, so it has no view", s.span)
        return self._bind_view(source, s.view, s.part)

    def visit_Assign(self, s: ast.Assign) -> CStmt:
        rhs = self.expr(s.value)
        if s.op == "=":
            return self._assign(s.target, rhs, s.value, s.span)
        if s.op not in COMPOUND:
            raise fail("unsupported", f"unknown assignment operator '{s.op}'", s.span)
        return self._compound(s.target, COMPOUND[s.op], rhs, s.value, s.span)

    def _assign(
        self, target: ast.Expr, rhs: CExpr, node: ast.Expr | None, span: Span | None
    ) -> CStmt:
        locate, t = self.lvalue(target)
        if isinstance(t, (T.Array, T.Struct)):
            store = self._aggregate_store(t, rhs, span)
            assert store is not None

            def assign_aggregate(f: Frame) -> None:
                container, key = locate(f)
                store(container[key], f)

            return CStmt(assign_aggregate)
        fn = with_cast(rhs, t, node, span).fn
        var = self.var(target) if isinstance(target, ast.Name) else None
        if var is not None and var.level == self.level:
            slot = var.slot  # the hot case: a local scalar

            def assign_local(f: Frame) -> None:
                f[slot] = fn(f)

            return CStmt(assign_local)

        def assign(f: Frame) -> None:
            value = fn(f)
            container, key = locate(f)
            container[key] = value

        return CStmt(assign)

    def _compound(
        self, target: ast.Expr, op: str, rhs: CExpr, node: ast.Expr | None, span: Span | None
    ) -> CStmt:
        locate, t = self.lvalue(target)
        var = self.var(target) if isinstance(target, ast.Name) else None
        if var is not None and var.level == self.level:
            slot = var.slot
            current = CExpr(lambda f: f[slot], t)
            value = with_cast(self.binary(op, current, rhs, None, node, span), t, None, span).fn

            def update_local(f: Frame) -> None:
                f[slot] = value(f)

            return CStmt(update_local)
        # Locate the target once (its indices may have side effects), then read-modify-write.
        read = element_reader(t)
        cell: list[Any] = [None]
        current = CExpr(lambda _f: cell[0], t)
        value = with_cast(self.binary(op, current, rhs, None, node, span), t, None, span).fn

        def update(f: Frame) -> None:
            container, key = locate(f)
            old = container[key]
            cell[0] = read(old) if read else old
            container[key] = value(f)

        return CStmt(update)

    def visit_IncDec(self, s: ast.IncDec) -> CStmt:
        one = CExpr(lambda _f: 1, PRIM["int"], 1)
        return self._compound(s.target, "+" if s.op == "++" else "-", one, None, s.span)

    def visit_CallStmt(self, s: ast.CallStmt) -> CStmt:
        if s.call.func in ("mcl_builtin_read", "mcl_builtin_write"):
            return CStmt(lambda _f: None)  # signature statements of library functions
        fn = self.call(s.call).fn
        return CStmt(fn)

    def visit_Swap(self, s: ast.Swap) -> CStmt:
        left, lt = self.lvalue(s.left)
        right, rt = self.lvalue(s.right)
        if lt != rt:
            raise fail("type", "both sides of '<=>' must have the same type", s.span)

        def swap(f: Frame) -> None:
            (lc, lk), (rc, rk) = left(f), right(f)
            a, b = lc[lk], rc[rk]
            if isinstance(lk, tuple) and isinstance(a, np.ndarray):
                a, b = a.copy(), b.copy()  # tiles of arrays: exchange contents, not views
            lc[lk], rc[rk] = b, a

        return CStmt(swap)

    def visit_If(self, s: ast.If) -> CStmt:
        cond = self.expr(s.cond).fn
        then = self.stmt(s.then)
        orelse = self.stmt(s.orelse) if s.orelse is not None else None
        t_run = then.run
        if orelse is None:

            def run_if(f: Frame) -> None:
                if cond(f):
                    t_run(f)

            run = run_if
        else:
            e_run = orelse.run

            def run_if_else(f: Frame) -> None:
                if cond(f):
                    t_run(f)
                else:
                    e_run(f)

            run = run_if_else
        open_roots = then.open_roots | (orelse.open_roots if orelse else frozenset())
        if not open_roots:
            return CStmt(run)
        branches = [(then.gen, then.run), (orelse.gen, orelse.run) if orelse else (None, None)]

        def gen(f: Frame) -> Iterator[BarrierToken]:
            g, r = branches[0] if cond(f) else branches[1]
            if g is not None:
                yield from g(f)
            elif r is not None:
                r(f)

        return CStmt(_unreachable, gen, open_roots)

    def visit_For(self, s: ast.For) -> CStmt:
        init = self.stmt(s.init)
        cond = self.expr(s.cond).fn
        step = self.stmt(s.step)
        body = self.stmt(s.body)
        i_run, s_run, b_run = init.run, step.run, body.run

        def run(f: Frame) -> None:
            i_run(f)
            while cond(f):
                b_run(f)
                s_run(f)

        if not body.open_roots:
            return CStmt(run)
        b_gen = body.gen
        assert b_gen is not None

        def gen(f: Frame) -> Iterator[BarrierToken]:
            i_run(f)
            while cond(f):
                yield from b_gen(f)
                s_run(f)

        return CStmt(_unreachable, gen, body.open_roots)

    def visit_Return(self, s: ast.Return) -> CStmt:
        if s.value is None:

            def ret_void(_f: Frame) -> None:
                raise ReturnSignal(None)

            return CStmt(ret_void)
        ret_type = self.declared(self.function).type
        value = self.expr(s.value)
        fn = (with_cast(value, ret_type, s.value, s.span) if scalar_name(ret_type) else value).fn

        def ret(f: Frame) -> None:
            raise ReturnSignal(fn(f))

        return CStmt(ret)

    def visit_Barrier(self, s: ast.Barrier) -> CStmt:
        root = resolving_root(s.space, self.foreach_stack, self.hwd, s.span)
        if root is None and self.function is not self.engine.entry:
            # Which units it would synchronise depends on the caller's foreach statements.
            raise fail(
                "unsupported",
                f"barrier({s.space}) in function '{self.function.name}', which is called: the "
                "interpreter synchronises barriers inside the foreach statements of the "
                "function it runs",
                s.span,
                hint="inline the function at its call, or run it directly",
            )
        if root is None:
            return CStmt(lambda _f: None)  # the host, outside foreach: nobody to wait for
        token = BarrierToken(s.space, root.id, s.span)

        def gen(_f: Frame) -> Generator[BarrierToken, None, None]:
            yield token

        return CStmt(_unreachable, gen, frozenset({root.id}))

    def visit_Foreach(self, s: ast.Foreach) -> CStmt:
        count = with_cast(self.expr(s.count), PRIM["int"], s.count, s.span).fn
        enclosing = self.foreach_stack[-1] if self.foreach_stack else None
        is_root = enclosing is None or enclosing.group != s.group
        limit = unit_limit(self.hwd, s.group)
        # A unit's frame: slot 0 links to the frame of whoever runs the foreach.
        self.level += 1
        self.slot_counts.append(1)
        var_slot = self.declare(s).slot
        units_slot = None
        if limit is not None:  # a hidden slot: the units of the group so far
            units_slot = self.slot_counts[self.level]
            self.slot_counts[self.level] += 1
        self.foreach_stack.append(ForeachInfo(Ref(s), s.group, is_root, s.span, units_slot))
        try:
            body = self.stmt(s.body)
            nslots = self.slot_counts[self.level]
        finally:
            self.foreach_stack.pop()
            self.slot_counts.pop()
            self.level -= 1
        template: list[Any] = [None] * nslots
        b_run = body.run
        prepare = _units_preparer(count, template, limit, units_slot, enclosing, is_root, s)

        outermost = enclosing is None
        if not body.open_roots:
            # No barrier synchronises these units: run them one after another.
            def run_units(f: Frame) -> None:
                n, base = prepare(f)
                tell = listener() if outermost else None
                for i in range(n):
                    unit = base.copy()
                    unit[0] = f
                    unit[var_slot] = i
                    try:
                        b_run(unit)
                    except ReturnSignal:
                        pass  # `return` ends this unit only
                    if tell is not None:
                        tell(i + 1, n)

            return CStmt(run_units)

        b_gen = body.gen
        assert b_gen is not None
        where = f"'foreach (int {s.var} in ... {s.group})'" + (f" at {s.span}" if s.span else "")
        root_id = Ref(s) if is_root else None

        def unit_gen(f: Frame, base: list[Any], i: int) -> Iterator[BarrierToken]:
            unit = base.copy()
            unit[0] = f
            unit[var_slot] = i
            try:
                yield from b_gen(unit)
            except ReturnSignal:
                return

        def gen(f: Frame) -> Iterator[BarrierToken]:
            n, base = prepare(f)
            units = [unit_gen(f, base, i) for i in range(n)]
            yield from lockstep(units, root_id, where)

        open_roots = body.open_roots - {Ref(s)}
        if open_roots:
            return CStmt(_unreachable, gen, open_roots)

        def run_lockstep(f: Frame) -> None:
            for token in gen(f):
                raise AssertionError(f"barrier at {token.span} escaped its foreach")

        return CStmt(run_lockstep)


def _units_preparer(
    count: Fn,
    template: list[Any],
    limit: UnitLimit | None,
    units_slot: int | None,
    enclosing: ForeachInfo | None,
    is_root: bool,
    s: ast.Foreach,
) -> Callable[[Frame], tuple[int, list[Any]]]:
    """`prepare(frame) -> (count, template of a unit's frame)` for a foreach. Where the
    description bounds the par_group, the count is checked against it (together with the
    counts of the directly enclosing foreach statements over the same group, whose
    product each unit's frame carries in `units_slot`)."""
    if limit is None or units_slot is None:
        return lambda f: (count(f), template)
    outer_slot = None if is_root or enclosing is None else enclosing.units_slot
    span = s.count.span or s.span

    def prepare(f: Frame) -> tuple[int, list[Any]]:
        n = count(f)
        outer = 1 if outer_slot is None else f[outer_slot]
        base = template.copy()
        base[units_slot] = limit.check(outer, max(n, 0), span)
        return n, base

    return prepare


def reshape_view(
    array: np.ndarray, shape: tuple[int, ...], span: Span | None, name: str
) -> np.ndarray:
    """A view with another shape on the same storage (`a as float[n/t][t] a2`)."""
    size = int(np.prod(shape)) if shape else 1
    flat = array.reshape(-1)
    if not np.shares_memory(flat, array) and array.size:
        raise fail("view", f"'{name}' cannot be a view of non-contiguous storage", span)
    if size > flat.size:
        raise fail(
            "view",
            f"view '{name}' of shape {shape} needs {size} elements, its array has {flat.size}",
            span,
        )
    return flat[:size].reshape(shape)


def _copy_struct(target: StructValue, source: object) -> None:
    """A struct declaration initialised from a struct value (the checker matched the types)."""
    assert isinstance(source, StructValue)
    target.fields.update(source.copy().fields)


def _copy_array(target: np.ndarray, source: np.ndarray, span: Span | None) -> None:
    if target.shape != source.shape:
        raise fail(
            "size",
            f"cannot copy an array of shape {source.shape} into one of shape {target.shape}",
            span,
        )
    if target.dtype == object:
        for index in np.ndindex(target.shape):
            value = source[index]
            target[index] = value.copy() if isinstance(value, StructValue) else value
    else:
        np.copyto(target, source)
