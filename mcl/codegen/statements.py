"""Emit MCPL statements as OpenCL C: the body a work-item executes, and helper functions.

Every statement keeps its MCPL names and gets a `// file.mcpl:LINE` comment pointing back
to the source (paper 4.4: code and feedback stay related to what the programmer wrote),
and the line directive of its span where the dialect has one (CUDA's `#line`:
`located`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcl.codegen.bracket_depth import Nesting, deepest_bracket
from mcl.codegen.c_expr import ExprPrinter
from mcl.codegen.c_names import c_name, opencl_type
from mcl.codegen.dialect import Dialect
from mcl.codegen.host_eval import Number
from mcl.codegen.layout import flat_dims, product
from mcl.codegen.mapping import FENCE_FLAGS, OpenCLMapping
from mcl.codegen.scope import Var
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

INDENT = "    "


def element_type(t: Prim | NamedType, in_buffer: bool = False) -> str:
    """OpenCL C spelling of an element type (bool arrays are stored as bytes)."""
    if isinstance(t, NamedType):
        return t.name
    if t.name == "bool" and in_buffer:
        return "uchar"
    return opencl_type(t.name)


def where(span: Span | None) -> str:
    """The trailing comment that points back to the MCPL source."""
    return f"  // {Path(span.file).name}:{span.line}" if span and span.file else ""


def located(dialect: Dialect, span: Span | None) -> list[str]:
    """The lines before a generated line that points back to `span` (that `where(span)`
    ends): the dialect's line directive of the span, where it has one."""
    if not (span and span.file):
        return []
    directive = dialect.line_directive(span)
    return [] if directive is None else [directive]


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
    """Appends the OpenCL lines of statements to `lines`. `printer.scope` is the current
    lexical scope (a child scope per block)."""

    printer: ExprPrinter
    mapping: OpenCLMapping
    spaces: SpaceResolver
    lines: list[str] = field(default_factory=list)
    # Macros for private array sizes the host sets at build time, with their size.
    specialised: list[tuple[str, Expr]] = field(default_factory=list)
    # Values of the named constants (for trip counts of loops to unroll).
    constants: dict[str, Number] = field(default_factory=dict)
    # The deepest bracket nesting of the lines so far (bracket_depth.py: clang's limit)
    # and the span of the statement printed last, which the lines after it belong to.
    deepest: Nesting = field(default_factory=Nesting)
    statement: Span | None = None

    # ------------------------------------------------------------------ helpers
    def line(self, indent: int, text: str, span: Span | None = None,
             note: str | None = None) -> None:
        """`text` at block depth `indent`, pointing back to `span` (then `note`, a comment
        after the MCPL line)."""
        comment = where(span) if note is None else f"{where(span) or '  //'} {note}"
        self.lines += located(self.mapping.dialect, span)
        self.lines.append(f"{INDENT * indent}{text}{comment}")
        if span is not None:
            self.statement = span
        # Inside `indent` braces (a function body's included), plus the line's own.
        depth = indent + deepest_bracket(text)[0]
        self.deepest = self.deepest.deeper(Nesting(depth, self.statement))

    def start(self, span: Span | None) -> None:
        """A new function body, of the MCPL construct at `span`: no lines, not nested."""
        self.lines = []
        self.specialised = []
        self.deepest = Nesting()
        self.statement = span

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

    def body(self, s: Stmt, indent: int) -> None:
        """Statements of a block (or a single statement) in a fresh scope, no braces."""
        with self.nested():
            for st in s.stmts if isinstance(s, Block) else (s,):
                self.stmt(st, indent)

    # ------------------------------------------------------------------ statements
    def stmt(self, s: Stmt, indent: int) -> None:
        self.visit(s, indent)

    def generic_visit(self, node: Any, *args: Any, **kwargs: Any) -> None:
        # A node kind of the AST with no rule here (unknown kinds fail in `visit`).
        raise MclError(
            error("codegen-stmt", f"cannot generate code for {type(node).__name__}", node.span)
        )

    def visit_Decl(self, s: Decl, indent: int) -> None:
        self.decl(s, indent)

    def visit_ViewDecl(self, s: ViewDecl, indent: int) -> None:
        source = self.printer.scope.lookup(s.source, s.span)
        self.view(source, s.view, indent, s.span, s.part)

    def visit_Assign(self, s: Assign, indent: int) -> None:
        self.line(indent, f"{self.assignment(s)};", s.span)

    def visit_IncDec(self, s: IncDec, indent: int) -> None:
        self.line(indent, f"{self.x(s.target)}{s.op};", s.span)

    def visit_CallStmt(self, s: CallStmt, indent: int) -> None:
        self.line(indent, f"{self.x(s.call)};", s.span)

    def visit_Swap(self, s: Swap, indent: int) -> None:
        t = self.c_type(self.printer.scope.type_of(s.left), s.span)
        a, b = self.x(s.left), self.x(s.right)
        self.line(indent, f"{{ {t} mcl_tmp = {a}; {a} = {b}; {b} = mcl_tmp; }}", s.span)

    def visit_If(self, s: If, indent: int) -> None:
        self.line(indent, f"if ({self.x(s.cond)}) {{", s.span)
        self.body(s.then, indent + 1)
        if s.orelse is not None:
            self.line(indent, "} else {")
            self.body(s.orelse, indent + 1)
        self.line(indent, "}")

    def visit_For(self, s: For, indent: int) -> None:
        if self.vector_copy(s, indent):
            return
        self.unroll_pragma(for_trip_count(s, self.constants, self.is_constant), indent)
        with self.nested():
            self.line(indent, f"for ({self.for_header(s)}) {{", s.span)
            self.body(s.body, indent + 1)
        self.line(indent, "}")

    def visit_Foreach(self, s: Foreach, indent: int) -> None:
        self.loop_foreach(s, indent)

    def visit_Barrier(self, s: Barrier, indent: int) -> None:
        self.line(indent, self.mapping.dialect.barrier(self.fence(s)), s.span)

    def visit_Return(self, s: Return, indent: int) -> None:
        value = f" {self.x(s.value)}" if s.value is not None else ""
        self.line(indent, f"return{value};", s.span)

    def visit_Block(self, s: Block, indent: int) -> None:
        self.line(indent, "{")
        self.body(s, indent + 1)
        self.line(indent, "}")

    def is_constant(self, name: str) -> bool:
        var = self.printer.scope.find(name)
        return var is not None and var.kind == "constant"

    def vector_copy(self, s: For, indent: int) -> bool:
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
        )
        if text is None:
            return False
        *directives, copy = text.split("\n")
        self.lines += directives  # preprocessor lines start in column 0
        self.line(indent, f"{copy}  // vector copy of the loop over {s.var}", s.span)
        return True

    def unroll_pragma(self, trip: int | None, indent: int) -> None:
        """`#pragma unroll` before a loop of a small constant trip count (unroll.py)."""
        if wants_unroll(trip, self.mapping.unroll):
            self.line(indent, f"#pragma unroll  // {trip} steps")

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

    def loop_foreach(self, s: Foreach, indent: int) -> None:
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
        count_value = _constant_count(s.count, self.constants, self.is_constant)
        self.unroll_pragma(count_value, indent)
        with self.nested():
            var = self.printer.scope.declare(Var(s.var, Prim("int"), kind="index"))
            count = self.x(s.count)
            v = var.cname
            self.line(indent, f"for (int {v} = 0; {v} < {count}; {v}++) {{", s.span)
            self.body(s.body, indent + 1)
        self.line(indent, "}")

    # ------------------------------------------------------------------ declarations
    def c_type(self, t: Type, span: Span | None) -> str:
        if isinstance(t, ArrayType):
            raise MclError(error("codegen-array", "arrays cannot be copied", span))
        return element_type(t)

    def scalar_decl_text(self, d: Decl) -> str:
        init = f" = {self.x(d.init)}" if d.init is not None else ""
        space, _ = self.spaces.resolve(d.spaces, SCALAR, d.span)
        var = self.printer.scope.declare(Var(d.name, d.type, "private", space))
        const = "const " if d.const else ""
        return f"{const}{self.c_type(d.type, d.span)} {var.cname}{init}"

    def decl(self, d: Decl, indent: int) -> None:
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
            self.line(indent, f"{self.scalar_decl_text(d)};", d.span)
        else:
            assert isinstance(d.type, ArrayType)
            size = self.constant_size(d.type, d.name, d.span)
            var = self.printer.scope.declare(Var(d.name, d.type, "private", space))
            const = "const " if d.const else ""
            aligned = self.mapping.dialect.aligned16 if self.mapping.vector_width else ""
            self.line(
                indent,
                f"{const}{element_type(d.type.element)} {var.cname}[{size}]{aligned};",
                d.span,
            )
        if d.view is not None:
            self.view(self.printer.scope.lookup(d.name), d.view, indent, d.span)

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

    def view(self, source: Var, view: View, indent: int, span: Span | None,
             part: Expr | None = None) -> None:
        """`a as float[n/t][t] a2`: a pointer to the same storage, indexed with its shape;
        for a view of a part (`a[i] as ...`, `b.data as ...`), to the part's first element,
        its subscripts evaluated here (the pointer a call would pass for the part)."""
        start = source.cname if part is None else self.x(part)
        viewed = source.name if part is None else print_expr(part)
        var = self.printer.scope.declare(
            Var(view.name, view.type, source.address_space, source.space, kind=source.kind,
                readonly=source.readonly)
        )
        dialect = self.mapping.dialect
        qualifier = dialect.maybe_unused + dialect.qualifier(source.address_space)
        if source.readonly:
            qualifier += "const "
        element = element_type(view.type.element, in_buffer=source.kind == "param")
        self.line(indent, f"{qualifier}{element}* const {var.cname} = {start};", span,
                  f"(view of {viewed})")

    # ------------------------------------------------------------------ guards
    def guarded(self, stmts: tuple[Stmt, ...], cond: str, indent: int) -> None:
        """Emit `stmts` so that only work-items with `cond` do the work while every
        work-item still reaches each barrier (OpenCL requires all work-items of a group to
        meet a barrier). Barrier-free runs of statements go inside `if (cond)`; blocks and
        loops that hold a barrier are entered by all and guarded inside. Declarations are
        hoisted out of the guard so the statements after a barrier still see them."""
        run: list[Stmt] = []

        def flush() -> None:
            if run:
                self.line(indent, f"if ({cond}) {{")
                with self.nested():
                    for st in run:
                        self.stmt(st, indent + 1)
                self.line(indent, "}")
                run.clear()

        for s in stmts:
            if isinstance(s, Decl):
                init = s.init
                flush()
                self.decl(Decl(s.type, s.name, s.spaces, False, None, s.view, span=s.span), indent)
                if init is not None:
                    run.append(Assign(Name(s.name), "=", init, span=s.span))
            elif not contains_barrier(s):
                run.append(s)
            else:
                flush()
                self.guarded_barrier_stmt(s, cond, indent)
        flush()

    def guarded_barrier_stmt(self, s: Stmt, cond: str, indent: int) -> None:
        match s:
            case Block():
                self.line(indent, "{")
                with self.nested():
                    self.guarded(s.stmts, cond, indent + 1)
                self.line(indent, "}")
            case For():
                with self.nested():
                    self.line(indent, f"for ({self.for_header(s)}) {{", s.span)
                    with self.nested():
                        self.guarded(_stmts(s.body), cond, indent + 1)
                self.line(indent, "}")
            case If():
                self.line(indent, f"if ({self.x(s.cond)}) {{", s.span)
                with self.nested():
                    self.guarded(_stmts(s.then), cond, indent + 1)
                if s.orelse is not None:
                    self.line(indent, "} else {")
                    with self.nested():
                        self.guarded(_stmts(s.orelse), cond, indent + 1)
                self.line(indent, "}")
            case (Barrier() | Decl() | ViewDecl() | Assign() | IncDec() | CallStmt() | Swap()
                  | Foreach() | Return()):
                # The barrier itself, or a statement around which the guard is split: as
                # it stands (the statements between barriers are guarded by `guarded`).
                self.stmt(s, indent)
            case _:
                unknown_node(s, "the guarded barrier printer")


def _stmts(s: Stmt) -> tuple[Stmt, ...]:
    return s.stmts if isinstance(s, Block) else (s,)
