"""One OpenCL kernel per top-level foreach nest of a leaf-level MCPL function.

The nest `foreach (bi in nb blocks) { shared float[..] t; foreach (w in nw warps) {
foreach (t in 32 threads) { BODY }}}` becomes, with fermi's mapping (blocks: work-group
dim 0, warps: work-item dim 1, threads: work-item dim 0):

    __kernel void f(...) {
        __local float t[..];
        const int bi = (int)get_group_id(0);
        const int w = (int)get_local_id(1);
        const int t = (int)get_local_id(0);
        BODY
    }

and the NDRange (work-groups x work-group size per dimension) follows from the foreach
counts: a dimension's work-group size is the product of the counts of its work-item
foreach statements, its number of groups the product of its work-group counts (several
foreach statements of one dimension are decomposed with / and %, innermost fastest). The
launch is exact, so no guards are needed; par_groups mapped to role `global` run in
work-groups of a fixed size and are guarded (`if (i < n)`), with barriers kept reachable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from mcl.codegen.c_expr import ExprPrinter
from mcl.codegen.ctree import INDENT, Comment, Directive, FunctionDef
from mcl.codegen.host_eval import static_int
from mcl.codegen.lanes import WIDTHS, LaneEmitter, NotVectorisable
from mcl.codegen.layout import flat_dims, product
from mcl.codegen.mapping import OpenCLMapping, ParGroupMapping
from mcl.codegen.plan import KernelArg, KernelPlan
from mcl.codegen.scope import CVar
from mcl.codegen.statements import BodyEmitter, element_type
from mcl.codegen.unroll import constant_count
from mcl.diagnostics import MclError, error
from mcl.mcpl.ast import (
    BINARY_PRECEDENCE,
    ArrayType,
    Block,
    Decl,
    Expr,
    Foreach,
    Function,
    Name,
    NamedType,
    Prim,
    Stmt,
    ViewDecl,
    walk,
)
from mcl.mcpl.nesting import ARRAY, SCALAR
from mcl.mcpl.typed import Typed
from mcl.mcpl.types import PRIMITIVES

_MUL = BINARY_PRECEDENCE["*"]
# Dialects with `shared_by_offset` (CUDA): the block's dynamic shared memory, which arrays
# sized by the host point into.
SHARED_BUFFER = "mcl_shared"


def shared_offset(cname: str) -> str:
    """CUDA: the kernel argument that holds the byte offset of a host-sized shared array."""
    return f"mcl_offset_{cname}"


def dynamic_shared_layout(sizes: list[int]) -> tuple[list[int], int]:
    """CUDA: byte offsets of the host-sized shared arrays of `sizes` bytes in the block's
    dynamic shared memory, each on a 16-byte boundary (vector copies), and the total."""
    offsets, total = [], 0
    for size in sizes:
        offsets.append(total)
        total += -(-max(1, size) // 16) * 16
    return offsets, total


@dataclass(frozen=True)
class NDRangeLevel:
    """A foreach statement that becomes part of the NDRange, with the declarations that
    stand directly in its body (memory shared by the units of the par_groups inside)."""

    foreach: Foreach
    mapping: ParGroupMapping
    decls: tuple[Stmt, ...]


def _stmts(s: Stmt) -> tuple[Stmt, ...]:
    return s.stmts if isinstance(s, Block) else (s,)


def group_mapping(f: Foreach, mapping: OpenCLMapping) -> ParGroupMapping:
    entry = mapping.par_groups.get(f.group)
    if entry is None:
        raise MclError(
            error(
                "codegen-unmapped-par-group",
                f"par_group '{f.group}' has no entry in {mapping.file}",
                f.span,
            )
        )
    return entry


def nest_levels(top: Foreach, mapping: OpenCLMapping) -> tuple[list[NDRangeLevel], Stmt]:
    """The NDRange levels of the nest starting at `top` and the body a work-item runs."""
    if group_mapping(top, mapping).role == "loop":
        return [], Block((top,), span=top.span)  # one work-item runs the whole loop
    levels: list[NDRangeLevel] = []
    f = top
    while True:
        entry = group_mapping(f, mapping)
        body = _stmts(f.body)
        inner = [
            s for s in body if isinstance(s, Foreach) and group_mapping(s, mapping).role != "loop"
        ]
        others = tuple(s for s in body if not (isinstance(s, Foreach) and s in inner))
        if len(inner) == 1 and all(isinstance(s, Decl | ViewDecl) for s in others):
            levels.append(NDRangeLevel(f, entry, others))
            f = inner[0]
            continue
        if inner:
            raise MclError(
                error(
                    "codegen-sibling-foreach",
                    f"the body of this foreach over '{f.group}' holds "
                    + (
                        "several foreach statements"
                        if len(inner) > 1
                        else "statements besides a foreach"
                    )
                    + "; code generation needs one foreach nest per kernel",
                    f.span,
                    hint="write the phases in one foreach and separate them with a barrier",
                )
            )
        levels.append(NDRangeLevel(f, entry, ()))
        return levels, f.body


@dataclass(frozen=True)
class NDRange:
    """A kernel's launch shape: groups, local sizes and guards."""

    groups: tuple[Expr, ...]
    local: tuple[Expr, ...]
    guards: tuple[tuple[int, Expr], ...]  # (dim, total count) for role `global`


def ndrange(levels: list[NDRangeLevel], typed: Typed) -> NDRange:
    """The launch sizes of a kernel's levels, built typed by `typed`."""
    nr_dims = max((lv.mapping.dim for lv in levels), default=0) + 1
    groups: list[Expr] = []
    local: list[Expr] = []
    guards: list[tuple[int, Expr]] = []
    for d in range(nr_dims):
        in_dim = [lv for lv in levels if lv.mapping.dim == d]
        glob = [lv for lv in in_dim if lv.mapping.role == "global"]
        if glob:
            size = typed.int_lit(glob[0].mapping.group_size or 1)
            total = product([lv.foreach.count for lv in glob], typed)
            local.append(size)
            rounded_up = typed.binary("+", total, typed.int_lit(size.value - 1))
            groups.append(typed.binary("/", rounded_up, size))
            guards.append((d, total))
        else:
            wg = [lv.foreach.count for lv in in_dim if lv.mapping.role == "work-group"]
            wi = [lv.foreach.count for lv in in_dim if lv.mapping.role == "work-item"]
            groups.append(product(wg, typed))
            local.append(product(wi, typed))
    return NDRange(tuple(groups), tuple(local), tuple(guards))


@dataclass
class KernelEmitter:
    """Emits the kernel of one top-level foreach nest."""

    function: Function
    mapping: OpenCLMapping
    body: BodyEmitter
    param_args: list[tuple[str, KernelArg]]  # (parameter declaration text, plan arg)
    host_vars: dict[str, CVar]
    static_values: dict[str, int | float] = field(default_factory=dict)  # known before launch

    @property
    def printer(self) -> ExprPrinter:
        return self.body.printer

    def emit(self, name: str, top: Foreach) -> tuple[FunctionDef, KernelPlan]:
        """The tree of the kernel `name` of the nest `top`, and its launch plan."""
        levels, work = nest_levels(top, self.mapping)
        lanes = self._lane_level(levels)
        notes: tuple[str, ...] = ()
        if lanes is not None:
            try:
                return self._emit(name, top, levels[:-1], work, lanes)
            except NotVectorisable as why:
                # The kernel is generated again from the start, as work-items.
                notes = (f"the lanes of '{lanes[0].foreach.group}' are work-items, not "
                         f"vectors: {why}",)
        kernel, plan = self._emit(name, top, levels, work, None)
        return replace(kernel, notes=notes), plan

    def _lane_level(self, levels: list[NDRangeLevel]) -> tuple[NDRangeLevel, int] | None:
        """The innermost level and its width when the mapping makes its units the
        components of OpenCL vectors (lanes.py) and its count is a vector width."""
        if not levels or self.mapping.lanes is None:
            return None
        last = levels[-1]
        if last.foreach.group != self.mapping.lanes or last.mapping.role != "work-item":
            return None
        width = constant_count(last.foreach.count, self.body.constants, self.body.is_constant)
        return (last, width) if width in WIDTHS else None

    def _value_parameters(self, top: Foreach, nd: NDRange
                          ) -> tuple[list[str], list[KernelArg]]:
        """The first parameters of a kernel's signature and their arguments: the
        function's parameters it uses, then the host values it reads."""
        signature = [text for text, _ in self.param_args]
        args = [a for _, a in self.param_args]
        for v in self._host_args(top, nd):
            assert isinstance(v.type, Prim)
            signature.append(f"const {element_type(v.type)} {v.cname}")
            args.append(KernelArg(v.name, "host", v.type.name))
        return signature, args

    def _ndrange(self, levels: list[NDRangeLevel], lanes: tuple[NDRangeLevel, int] | None
                 ) -> NDRange:
        """The launch sizes of a kernel's levels; lanes (vector code) only where no
        work-item is guarded."""
        nd = ndrange(levels, self.printer.scope.typed)
        if lanes is not None and nd.guards:
            raise NotVectorisable("work-items of role 'global' are guarded")
        return nd

    def _emit(
        self, name: str, top: Foreach, levels: list[NDRangeLevel], work: Stmt,
        lanes: tuple[NDRangeLevel, int] | None,
    ) -> tuple[FunctionDef, KernelPlan]:
        nd = self._ndrange(levels, lanes)
        self.body.start()
        with self.body.nested():
            replicated: list[Decl | ViewDecl] = []
            local_args = self._shared_declarations(levels, replicated)
            for lv in levels:
                self._index_declaration(lv, levels)
            for d in replicated:  # after the indices their initialisers may read
                self.body.stmt(d)
            dialect = self.mapping.dialect
            guard = " && ".join(
                f"{dialect.unit_index('global', d)} < "
                f"{self.printer.wrap(total, BINARY_PRECEDENCE['<'] + 1)}"
                for d, total in nd.guards
            )
            if lanes is not None:
                LaneEmitter(self.body, lanes[0].foreach, lanes[1]).emit()
            elif guard:
                self.body.guarded(_stmts(work), guard)
            else:
                self.body.body(work)
        signature, args = self._value_parameters(top, nd)
        for v in local_args:
            assert isinstance(v.type, ArrayType)
            element = v.type.element
            signature.append(self.mapping.dialect.shared_parameter(element_type(element),
                                                                   v.cname))
            size = product(flat_dims(v.type), self.printer.scope.typed)
            args.append(
                KernelArg(v.name, "local", element.name, size, isinstance(element, NamedType))
            )
        attribute = self._work_group_size_attribute(nd)
        header = self.mapping.dialect.kernel_head(attribute, name)
        header += ",\n".join(f"{INDENT}{s}" for s in signature) + ")"
        defines = tuple(self.body.specialised)
        # The kernel's opening comment names the nest's line.
        kernel = FunctionDef(self.function.name, top.span, header, self.body.out,
                             size_macros(defines))
        plan = KernelPlan(
            name, self.function.name, tuple(args), nd.groups, nd.local, top.span, defines
        )
        return kernel, plan

    # ------------------------------------------------------------------ parts
    def _index_declaration(self, lv: NDRangeLevel, levels: list[NDRangeLevel]) -> None:
        same = [
            x
            for x in levels
            if (x.mapping.role, x.mapping.dim) == (lv.mapping.role, lv.mapping.dim)
        ]
        k = same.index(lv)
        linear = self.mapping.dialect.unit_index(lv.mapping.role, lv.mapping.dim)
        inner = product([x.foreach.count for x in same[k + 1 :]], self.printer.scope.typed)
        text = linear
        if k + 1 < len(same):
            text += f" / {self.printer.wrap(inner, _MUL + 1)}"
        if k > 0:
            text += f" % {self.printer.wrap(lv.foreach.count, _MUL + 1)}"
        f = lv.foreach
        var = self.printer.scope.declare(CVar(f.var, Prim("int"), kind="index"))
        header = f"foreach (int {f.var} in {_mcpl(f.count)} {f.group})"
        self.body.line(f"const int {var.cname} = {text};", f.span, header)

    def _shared_declarations(self, levels: list[NDRangeLevel], replicated: list[Decl | ViewDecl]
                             ) -> list[CVar]:
        """Declarations between foreach statements: memory shared by the work-items of a
        group (`__local`). Constant sizes are declared in the kernel; other sizes are
        kernel arguments whose size the host sets at launch. A private scalar with an
        initialiser (the original MCL's `int base = b * 32;` between the blocks and the
        threads; the checker makes sure it is never written again) goes to `replicated`:
        every work-item computes it after the indices, and so do the views (a view of an
        element, `a[b] as float[4][8] row;`, reads the index of its level)."""
        dynamic: list[CVar] = []
        scope = self.printer.scope
        shared = self.mapping.dialect.shared_keyword
        limit = self.mapping.dialect.static_shared_limit
        by_host = limit is not None and self._constant_shared_bytes(levels) > limit
        for lv in levels:
            for d in lv.decls:
                if isinstance(d, ViewDecl):
                    replicated.append(d)
                    continue
                assert isinstance(d, Decl)
                is_array = isinstance(d.type, ArrayType)
                space, address_space = self.body.spaces.resolve(
                    d.spaces, ARRAY if is_array else SCALAR, d.span,
                    self.body.spaces.hwd.par_group(lv.foreach.group))
                if address_space == "private" and not is_array and d.init is not None:
                    replicated.append(d)
                    continue
                if address_space != "local" or d.init is not None:
                    raise MclError(
                        error(
                            "codegen-shared-decl",
                            f"'{d.name}' is declared at the level of par_group "
                            f"'{lv.foreach.group}' in memory space '{space}'; only uninitialised "
                            "__local memory can be shared by the work-items of a group",
                            d.span,
                        )
                    )
                if not isinstance(d.type, ArrayType):
                    assert isinstance(d.type, Prim | NamedType)
                    var = scope.declare(CVar(d.name, d.type, "local", space))
                    self.body.line(f"{shared} {element_type(d.type)} {var.cname};", d.span)
                elif self._is_constant(flat_dims(d.type)) and not by_host:
                    var = scope.declare(CVar(d.name, d.type, "local", space))
                    size = self.printer.expr(product(flat_dims(d.type), scope.typed))
                    # 16-byte aligned for the vector copies of vectorize.py
                    aligned = self.mapping.dialect.aligned16 if self.mapping.vector_width else ""
                    self.body.line(
                        f"{shared} {element_type(d.type.element)} {var.cname}[{size}]{aligned};",
                        d.span,
                    )
                else:
                    var = scope.declare(CVar(d.name, d.type, "local", space, kind="param"))
                    dynamic.append(var)
                    if self.mapping.dialect.shared_by_offset:
                        self._dynamic_shared(var, len(dynamic) == 1, d)
                    else:
                        self.body.out.append(Comment(
                            f"{var.cname}: __local memory sized by the host (kernel argument)",
                            d.span))
                if d.view is not None:
                    self.body.view(var, d.view, d.span)
        return dynamic

    def _constant_shared_bytes(self, levels: list[NDRangeLevel]) -> int:
        """Bytes of the group-shared arrays of constant size declared at `levels`, at the
        constants' values of this generation (their overrides included)."""
        total = 0
        for lv in levels:
            for d in lv.decls:
                if not isinstance(d, Decl) or not isinstance(d.type, ArrayType) \
                        or not isinstance(d.type.element, Prim) or d.init is not None:
                    continue
                _, address_space = self.body.spaces.resolve(
                    d.spaces, ARRAY, d.span, self.body.spaces.hwd.par_group(lv.foreach.group))
                sizes = [static_int(e, self.static_values) for e in flat_dims(d.type)]
                primitive = PRIMITIVES.get(d.type.element.name)
                if address_space != "local" or None in sizes or primitive is None:
                    continue
                total += math.prod(s for s in sizes if s is not None) * primitive.size
        return total

    def _dynamic_shared(self, var: CVar, first: bool, d: Decl) -> None:
        """CUDA has one dynamic shared buffer per block (its size is a launch parameter):
        an array sized by the host is a pointer into it at a byte offset that the host
        passes as the kernel argument (`dynamic_shared_layout`)."""
        assert isinstance(var.type, ArrayType) and isinstance(var.type.element, Prim | NamedType)
        if first:
            self.body.line(f"extern __shared__ __align__(16) unsigned char {SHARED_BUFFER}[];")
        element = element_type(var.type.element)
        self.body.line(
            f"{element}* const {var.cname} = ({element}*)({SHARED_BUFFER} + "
            f"{shared_offset(var.cname)});",
            d.span,
            comment="shared memory sized by the host",
        )

    def _is_constant(self, exprs: list[Expr]) -> bool:
        for e in exprs:
            for n in walk(e):
                if isinstance(n, Name) and self.printer.scope.lookup(n.name).kind != "constant":
                    return False
        return True

    def _host_args(self, top: Foreach, nd: NDRange) -> list[CVar]:
        """Host variables (Fig. 9's dimension statements) the kernel reads."""
        used = {n.name for n in walk(top) if isinstance(n, Name)}
        for e in (*nd.groups, *nd.local):
            used |= {n.name for n in walk(e) if isinstance(n, Name)}
        return [v for name, v in self.host_vars.items() if name in used]

    def _work_group_size_attribute(self, nd: NDRange) -> str:
        """reqd_work_group_size when the work-group size is a compile-time constant: the
        OpenCL compiler can then size registers and vectorise for it."""
        sizes: list[str] = []
        for s in nd.local:
            value = static_int(s, self.static_values)
            if self._is_constant([s]):
                # In terms of the named constants, so that a -D override of a constant
                # (Kernel Tuner, mcl tune) changes the attribute with the launch.
                sizes.append(self.printer.expr(s))
            elif value is not None:
                sizes.append(str(value))
            else:
                return ""
        return self.mapping.dialect.group_size_attribute(sizes)


def size_macros(defines: tuple[tuple[str, Expr], ...]) -> list[Directive]:
    """The macros of private array sizes that the host sets with -D when it builds the
    kernel for the sizes it runs with (`BodyEmitter.constant_size`), each with a value
    until then."""
    return [
        directive
        for macro, size in defines
        for directive in (
            Directive(f"#ifndef {macro}"),
            Directive(f"#define {macro} 1",
                      f"= {_mcpl(size)}, set with -D {macro}=... when the kernel is built"),
            Directive("#endif"),
        )
    ]


def _mcpl(e: Expr) -> str:
    from mcl.mcpl.printer import print_expr

    return print_expr(e)
