"""Emit MCPL statements as OpenCL C: the body a work-item executes, and helper functions.

The statements become nodes of the C syntax tree (mcl.codegen.ctree), each with the span
of its MCPL statement: the printer ends its line with a `// file.mcpl:LINE` comment
pointing back to the source (paper 4.4: code and feedback stay related to what the
programmer wrote), after the line directive of the span where the dialect has one
(CUDA's `#line`). Every statement keeps its MCPL names.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from mcl.codegen.c_expr import ExprPrinter
from mcl.codegen.c_names import c_name, opencl_type
from mcl.codegen.ctree import CodeLine, Compound, Directive, ForLoop, Node, ReturnLine
from mcl.codegen.host_eval import Number
from mcl.codegen.layout import flat_dims, product
from mcl.codegen.mapping import FENCE_FLAGS, OpenCLMapping
from mcl.codegen.scope import CVar
from mcl.codegen.unroll import constant_count as _constant_count
from mcl.codegen.unroll import for_trip_count, wants_unroll
from mcl.codegen.vectorize import vector_copy
from mcl.diagnostics import MclError, Span, error
from mcl.hdl.model import HardwareDescription, ParGroup
from mcl.mcpl.ast import (
    ArrayType,
    Assign,
    Barrier,
    Block,
    CallStmt,
    Decl,
    Expr,
    For,
    Foreach,
    If,
    IncDec,
    Name,
    NamedType,
    Prim,
    Return,
    Stmt,
    Swap,
    Type,
    View,
    ViewDecl,
    walk,
)
from mcl.mcpl.nesting import ARRAY, SCALAR, default_space
from mcl.mcpl.printer import print_expr
from mcl.mcpl.visitor import StrictVisitor, unknown_node


def element_type(t: Prim | NamedType, in_buffer: bool = False) -> str:
    """OpenCL C spelling of an element type (bool arrays are stored as bytes)."""
    if isinstance(t, NamedType):
        return t.name
    if t.name == "bool" and in_buffer:
        return "uchar"
    return opencl_type(t.name)


def contains_barrier(s: object) -> bool:
    return any(isinstance(n, Barrier) for n in walk(s))


@dataclass(frozen=True)
class SpaceResolver:
    """The memory space of a declaration or parameter and its OpenCL address space.
    Without a space modifier: `mcl.mcpl.nesting.default_space` (parameters the outermost
    default space; arrays declared in a work-item its registers, a private array)."""

    mapping: OpenCLMapping
    hwd: HardwareDescription

    def resolve(
        self, spaces: tuple[str, ...], kind: str, span: Span | None, level: ParGroup | None = None
    ) -> tuple[str | None, str]:
        """`kind`: nesting.PARAMETER, ARRAY or SCALAR; `level`: the par_group the
        declaration stands in (default: the executing unit's, inside a work-item)."""
        if spaces:
            space: str | None = spaces[0]
        else:
            where = level if level is not None else self.hwd.executing_unit().group
            found = default_space(self.hwd, kind, where)
            space = found.name if found is not None else None
        if space is None:
            return None, "private"
        entry = self.mapping.spaces.get(space)
        if entry is None:
            raise MclError(
                error(
                    "codegen-unmapped-space",
                    f"memory space '{space}' has no entry in {self.mapping.file}",
                    span,
                )
            )
        return space, entry.address_space


@dataclass
class BodyEmitter(StrictVisitor):
    """Builds the syntax tree (mcl.codegen.ctree) of statements: the nodes go to `out`,
    the block being emitted. `printer.scope` is the current lexical scope (a child scope
    per block)."""

    printer: ExprPrinter
    mapping: OpenCLMapping
    spaces: SpaceResolver
    out: list[Node] = field(default_factory=list)
    # Macros for private array sizes the host sets at build time, with their size.
    specialised: list[tuple[str, Expr]] = field(default_factory=list)
    # Values of the named constants (for trip counts of loops to unroll).
    constants: dict[str, Number] = field(default_factory=dict)

    # ------------------------------------------------------------------ helpers
    def line(self, text: str, span: Span | None = None, note: str | None = None,
             comment: str | None = None) -> None:
        """The line of C `text`, pointing back to `span` (then `note`, a comment after
        the MCPL line); `comment`: the code's own comment, before the MCPL line."""
        self.out.append(CodeLine(text, span, note, comment))

    def start(self) -> None:
        """A new function body: no nodes, no specialised sizes."""
        self.out = []
        self.specialised = []

    @contextmanager
    def collecting(self) -> Iterator[list[Node]]:
        """The nodes emitted inside the `with` go to the list it gives."""
        outer, self.out = self.out, []
        try:
            yield self.out
        finally:
            self.out = outer

    @contextmanager
    def braced(self, opening: str, span: Span | None = None, *, loop: bool = False,
               unroll: int | None = None, close: str | None = "}") -> Iterator[Compound]:
        """The nodes emitted inside the `with` stand in braces after the line `opening`
        (of `span`): a loop (`unroll`: its pragma's trip count) or other braces; `close`
        None: the last line inside closes them."""
        closing = None if close is None else CodeLine(close)
        node = ForLoop([], closing, unroll) if loop else Compound([], closing)
        self.out.append(node)
        with self.section(node, opening, span):
            yield node

    @contextmanager
    def section(self, node: Compound, opening: str, span: Span | None = None
                ) -> Iterator[None]:
        """A further section of braces `node` (`} else {`)."""
        with self.collecting() as body:
            node.sections.append((CodeLine(opening, span), body))
            yield

    def x(self, e: Expr) -> str:
        return self.printer.expr(e)

    @contextmanager
    def nested(self) -> Iterator[None]:
        outer = self.printer.scope
        self.printer.scope = outer.child()
        try:
            yield
        finally:
            self.printer.scope = outer

    def body(self, s: Stmt) -> None:
        """Statements of a block (or a single statement) in a fresh scope, no braces."""
        with self.nested():
            for st in s.stmts if isinstance(s, Block) else (s,):
                self.stmt(st)

    # ------------------------------------------------------------------ statements
    def stmt(self, s: Stmt) -> None:
        self.visit(s)

    def generic_visit(self, node: Any, *args: Any, **kwargs: Any) -> None:
        # A node kind of the AST with no rule here (unknown kinds fail in `visit`).
        raise MclError(
            error("codegen-stmt", f"cannot generate code for {type(node).__name__}", node.span)
        )

    def visit_Decl(self, s: Decl) -> None:
        self.decl(s)

    def visit_ViewDecl(self, s: ViewDecl) -> None:
        source = self.printer.scope.lookup(s.source, s.span)
        self.view(source, s.view, s.span, s.part)

    def visit_Assign(self, s: Assign) -> None:
        self.line(f"{self.assignment(s)};", s.span)

    def visit_IncDec(self, s: IncDec) -> None:
        self.line(f"{self.x(s.target)}{s.op};", s.span)

    def visit_CallStmt(self, s: CallStmt) -> None:
        self.line(f"{self.x(s.call)};", s.span)

    def visit_Swap(self, s: Swap) -> None:
        t = self.c_type(self.printer.scope.type_of(s.left), s.span)
        a, b = self.x(s.left), self.x(s.right)
        self.line(f"{{ {t} mcl_tmp = {a}; {a} = {b}; {b} = mcl_tmp; }}", s.span)

    def visit_If(self, s: If) -> None:
        with self.braced(f"if ({self.x(s.cond)}) {{", s.span) as node:
            self.body(s.then)
        if s.orelse is not None:
            with self.section(node, "} else {"):
                self.body(s.orelse)

    def visit_For(self, s: For) -> None:
        if self.vector_copy(s):
            return
        unroll = self.unroll(for_trip_count(s, self.constants, self.is_constant))
        if not self.mapping.unroll_barrier_loops and contains_barrier(s.body):
            unroll = None
        with self.nested(), self.braced(f"for ({self.for_header(s)}) {{", s.span, loop=True,
                                        unroll=unroll):
            self.body(s.body)

    def visit_Foreach(self, s: Foreach) -> None:
        self.loop_foreach(s)

    def visit_Barrier(self, s: Barrier) -> None:
        self.line(self.mapping.dialect.barrier(self.fence(s)), s.span)

    def visit_Return(self, s: Return) -> None:
        value = f" {self.x(s.value)}" if s.value is not None else ""
        self.out.append(ReturnLine(f"return{value};", s.span))

    def visit_Block(self, s: Block) -> None:
        with self.braced("{"):
            self.body(s)

    def is_constant(self, name: str) -> bool:
        var = self.printer.scope.find(name)
        return var is not None and var.kind == "constant"

    def vector_copy(self, s: For) -> bool:
        """A loop that copies `vector_width` contiguous floats as one vector access."""
        if not self.mapping.vector_width:
            return False
        text = vector_copy(
            s,
            self.mapping.vector_width,
            self.printer.scope,
            self.constants,
            self.is_constant,
            self.x,
            self.mapping.dialect,
            self.printer.needs.wide_copies,
        )
        if text is None:
            return False
        *directives, copy = text.split("\n")
        self.out += [Directive(d) for d in directives]  # preprocessor lines, column 0
        self.line(copy, s.span, comment=f"vector copy of the loop over {s.var}")
        return True

    def unroll(self, trip: int | None) -> int | None:
        """The trip count of a loop that gets an unroll pragma (unroll.py), else None."""
        return trip if wants_unroll(trip, self.mapping.unroll) else None

    def assignment(self, s: Assign) -> str:
        target, value = self.x(s.target), self.x(s.value)
        scope = self.printer.scope
        if s.op == "%=" and (scope.is_float(s.target) or scope.is_float(s.value)):
            return f"{target} = fmod({target}, {value})"
        return f"{target} {s.op} {value}"

    def for_header(self, s: For) -> str:
        if isinstance(s.init, Decl):
            init = self.scalar_decl_text(s.init)
        else:
            init = self.assignment(s.init)
        step = (
            f"{self.x(s.step.target)}{s.step.op}"
            if isinstance(s.step, IncDec)
            else self.assignment(s.step)
        )
        return f"{init}; {self.x(s.cond)}; {step}"

    def fence(self, s: Barrier) -> str:
        entry = self.mapping.spaces.get(s.space)
        if entry is None or entry.barrier is None:
            raise MclError(
                error(
                    "codegen-barrier",
                    f"{self.mapping.file} gives no barrier for memory space '{s.space}'",
                    s.span,
                    hint=f'add barrier = "local" or "global" to spaces.{s.space}',
                )
            )
        return FENCE_FLAGS[entry.barrier]

    def loop_foreach(self, s: Foreach) -> None:
        """A foreach over a par_group of role `loop`: its units run one after another."""
        entry = self.mapping.par_groups.get(s.group)
        if entry is None or entry.role != "loop":
            role = entry.role if entry else "unmapped"
            raise MclError(
                error(
                    "codegen-foreach",
                    f"foreach over '{s.group}' ({role} in {self.mapping.file}) must enclose "
                    "the statements of the kernel, not stand among them",
                    s.span,
                )
            )
        if contains_barrier(s.body):
            raise MclError(
                error(
                    "codegen-foreach",
                    f"'{s.group}' runs as a loop inside a work-item ({self.mapping.file}), "
                    "so its body cannot hold a barrier",
                    s.span,
                )
            )
        unroll = self.unroll(_constant_count(s.count, self.constants, self.is_constant))
        with self.nested():
            var = self.printer.scope.declare(CVar(s.var, Prim("int"), kind="index"))
            count = self.x(s.count)
            v = var.cname
            with self.braced(f"for (int {v} = 0; {v} < {count}; {v}++) {{", s.span,
                             loop=True, unroll=unroll):
                self.body(s.body)

    # ------------------------------------------------------------------ declarations
    def c_type(self, t: Type, span: Span | None) -> str:
        if isinstance(t, ArrayType):
            raise MclError(error("codegen-array", "arrays cannot be copied", span))
        return element_type(t)

    def scalar_decl_text(self, d: Decl) -> str:
        init = f" = {self.x(d.init)}" if d.init is not None else ""
        space, _ = self.spaces.resolve(d.spaces, SCALAR, d.span)
        var = self.printer.scope.declare(CVar(d.name, d.type, "private", space))
        const = "const " if d.const else ""
        return f"{const}{self.c_type(d.type, d.span)} {var.cname}{init}"

    def decl(self, d: Decl) -> None:
        """A declaration inside a work-item: whatever its space, it belongs to this unit
        alone, so it is private (spaces shared by several units are declared at the
        level of their par_group, see `kernels.py`)."""
        is_array = isinstance(d.type, ArrayType)
        space, address_space = self.spaces.resolve(d.spaces, ARRAY if is_array else SCALAR,
                                                   d.span)
        if address_space == "local":
            raise MclError(
                error(
                    "codegen-local-decl",
                    f"'{d.name}' is in memory space '{space}' (__local), so it must be declared "
                    "directly inside the foreach of the par_group that shares it",
                    d.span,
                )
            )
        if not is_array:
            self.line(f"{self.scalar_decl_text(d)};", d.span)
        else:
            assert isinstance(d.type, ArrayType)
            size = self.constant_size(d.type, d.name, d.span)
            var = self.printer.scope.declare(CVar(d.name, d.type, "private", space))
            const = "const " if d.const else ""
            aligned = self.mapping.dialect.aligned16 if self.mapping.vector_width else ""
            self.line(
                f"{const}{element_type(d.type.element)} {var.cname}[{size}]{aligned};",
                d.span,
            )
        if d.view is not None:
            self.view(self.printer.scope.lookup(d.name), d.view, d.span)

    def constant_size(self, t: ArrayType, name: str, span: Span | None) -> str:
        """Private arrays need a size known when the kernel is compiled. A size made of
        constants is printed; one that depends on the kernel's sizes (`reg float[p] aTemp`)
        becomes a macro the host defines when it builds the kernel (`-D MCL_SIZE_aTemp=...`),
        so the kernel is specialised for the sizes it runs with."""
        dims = flat_dims(t)
        names = {n.name for dim in dims for n in walk(dim) if isinstance(n, Name)}
        variable = sorted(n for n in names if self.printer.scope.lookup(n, span).kind != "constant")
        if not variable:
            return self.x(product(dims, self.printer.scope.typed))
        if not any(
            self.printer.scope.lookup(n, span).kind in ("param", "host") for n in variable
        ) or any(
            self.printer.scope.lookup(n, span).kind not in ("param", "host") for n in variable
        ):
            raise MclError(
                error(
                    "codegen-private-array-size",
                    f"the size of private array '{name}' depends on '{variable[0]}', which the "
                    "host does not know; OpenCL needs the size of a private array when the "
                    "kernel is compiled",
                    span,
                    hint="size it with constants or the function's parameters",
                )
            )
        macro = f"MCL_SIZE_{c_name(name)}"
        taken = {m for m, _ in self.specialised}
        k = 1
        while macro in taken:
            k += 1
            macro = f"MCL_SIZE_{c_name(name)}_{k}"
        self.specialised.append((macro, product(dims, self.printer.scope.typed)))
        return macro

    def view(self, source: CVar, view: View, span: Span | None,
             part: Expr | None = None) -> None:
        """`a as float[n/t][t] a2`: a pointer to the same storage, indexed with its shape;
        for a view of a part (`a[i] as ...`, `b.data as ...`), to the part's first element,
        its subscripts evaluated here (the pointer a call would pass for the part)."""
        start = source.cname if part is None else self.x(part)
        viewed = source.name if part is None else print_expr(part)
        var = self.printer.scope.declare(
            CVar(view.name, view.type, source.address_space, source.space, kind=source.kind,
                readonly=source.readonly)
        )
        dialect = self.mapping.dialect
        qualifier = dialect.maybe_unused + dialect.qualifier(source.address_space)
        if source.readonly:
            qualifier += "const "
        element = element_type(view.type.element, in_buffer=source.kind == "param")
        self.line(f"{qualifier}{element}* const {var.cname} = {start};", span,
                  f"(view of {viewed})")

    # ------------------------------------------------------------------ guards
    def guarded(self, stmts: tuple[Stmt, ...], cond: str) -> None:
        """Emit `stmts` so that only work-items with `cond` do the work while every
        work-item still reaches each barrier (OpenCL requires all work-items of a group to
        meet a barrier). Barrier-free runs of statements go inside `if (cond)`; blocks and
        loops that hold a barrier are entered by all and guarded inside. Declarations are
        hoisted out of the guard so the statements after a barrier still see them."""
        run: list[Stmt] = []

        def flush() -> None:
            if run:
                with self.braced(f"if ({cond}) {{"), self.nested():
                    for st in run:
                        self.stmt(st)
                run.clear()

        for s in stmts:
            if isinstance(s, Decl):
                init = s.init
                flush()
                self.decl(Decl(s.type, s.name, s.spaces, False, None, s.view, span=s.span))
                if init is not None:
                    run.append(Assign(Name(s.name), "=", init, span=s.span))
            elif not contains_barrier(s):
                run.append(s)
            else:
                flush()
                self.guarded_barrier_stmt(s, cond)
        flush()

    def guarded_barrier_stmt(self, s: Stmt, cond: str) -> None:
        match s:
            case Block():
                with self.braced("{"), self.nested():
                    self.guarded(s.stmts, cond)
            case For():
                with self.nested(), self.braced(f"for ({self.for_header(s)}) {{", s.span,
                                                loop=True), self.nested():
                    self.guarded(_stmts(s.body), cond)
            case If():
                with self.braced(f"if ({self.x(s.cond)}) {{", s.span) as node:
                    with self.nested():
                        self.guarded(_stmts(s.then), cond)
                if s.orelse is not None:
                    with self.section(node, "} else {"), self.nested():
                        self.guarded(_stmts(s.orelse), cond)
            case (Barrier() | Decl() | ViewDecl() | Assign() | IncDec() | CallStmt() | Swap()
                  | Foreach() | Return()):
                # The barrier itself, or a statement around which the guard is split: as
                # it stands (the statements between barriers are guarded by `guarded`).
                self.stmt(s)
            case _:
                unknown_node(s, "the guarded barrier printer")


def _stmts(s: Stmt) -> tuple[Stmt, ...]:
    return s.stmts if isinstance(s, Block) else (s,)
