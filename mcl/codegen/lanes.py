"""Explicit vector code for the lanes of a CPU leaf (paper section 4.4: a par_group of
vector lanes is the SIMD unit of a core).

A mapping that names its lane par_group (`[codegen] lanes = "vectors"` in
`x86_avx512.opencl.toml`) asks for the innermost foreach of a kernel over that group,
`foreach (int vj in 16 vectors) BODY`, to become one work-item that runs BODY once on
OpenCL vectors of 16 components (`float16`, `int16`) instead of 16 work-items that the
OpenCL compiler may or may not turn into SIMD code (PoCL's work-item-loop vectoriser does
so only for code without loops). The translation is done only where it can prove what
it needs, and otherwise leaves the kernel as it was (work-items), so it never changes a
result:

- the lane count is a compile-time constant of 2, 4, 8 or 16 (a build that overrides
  the constants behind it with -D stops with an error);
- a value is *uniform* (the same in every lane: a scalar) unless it depends on the lane
  index or on a private array of the lanes, then it is *varying* (a vector); varying
  values are float or int, never mixed without a conversion, and take no built-in
  function but `min`/`max` of ints (printed as comparisons: the PoCL that comes with mcl
  builds no kernel that calls a built-in on 16-component vectors);
- loops and the conditions of `if` statements are uniform, except an `if` whose
  branches only store into arrays shared with the host or the work-group, which
  becomes one scalar store per lane that the condition allows (its value and index are
  computed in every lane, so they read no shared array and do not divide);
- private arrays of the lanes are indexed with uniform indices (an array of vectors);
- a store of a uniform value to a uniform element of a shared array (every lane writes
  the same element, which the checker reports as `mcpl-write-race`) is one scalar store;
- a varying access to a shared array is one vector load or store (`vload16`) when its
  offset is `base + lane` with `base` uniform (coefficient 1, proven symbolically with
  the constants kept as symbols, so a -D override cannot break it). An index clamped
  with `min(base + lane, limit)` loads one vector when `base + 15 <= limit` holds at run
  time and gathers lane by lane otherwise; any other varying offset gathers (and
  scatters) lane by lane.
Anything else raises `NotVectorisable`, and the caller generates work-items as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import sympy

from mcl.codegen.c_expr import UNARY
from mcl.codegen.ctree import Directive
from mcl.codegen.layout import flat_dims, index_chain, linear_offset
from mcl.codegen.scope import FLOAT, INT, CVar
from mcl.codegen.statements import BodyEmitter
from mcl.codegen.unroll import for_trip_count
from mcl.codegen.vectorize import _sympy, guard
from mcl.mcpl import ast
from mcl.mcpl import types as T
from mcl.mcpl.ast import (
    BINARY_PRECEDENCE,
    ArrayType,
    Assign,
    Binary,
    Block,
    Call,
    Decl,
    Expr,
    For,
    IncDec,
    Index,
    Name,
    Prim,
    Stmt,
    Unary,
    walk,
)
from mcl.mcpl.nesting import ARRAY, SCALAR
from mcl.mcpl.typed import Typed
from mcl.mcpl.varying import assigned_names, varying_names
from mcl.mcpl.visitor import unknown_node

WIDTHS = (2, 4, 8, 16)
# OpenCL's vloadN/vstoreN go up to 8 components on every PoCL build (see the module's
# docstring); 16 components are two halves.
_HALF = 8
_COMPONENTS = "0123456789abcdef"
_LANE = "mcl_lane"


class NotVectorisable(Exception):
    """The lane body uses something the translation does not prove (the message says
    what); the kernel keeps its work-items."""


@dataclass(frozen=True)
class ClampedLane:
    """A varying int `x = min(base + lane, limit)` (limit None: no clamp), never written
    again: `base` and `limit` are uniform scalars declared next to x."""

    base: str
    limit: str | None


@dataclass
class LaneEmitter:
    """Emits the body of the lane foreach `lanes` as vector code into `body.out`."""

    body: BodyEmitter
    lanes: ast.Foreach
    width: int
    varying: set[str] = field(default_factory=set)
    lane_arrays: set[str] = field(default_factory=set)
    declared: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    # Per block: the lane-affine ints declared in it (None: a declaration that hides one
    # of an outer block).
    affine: list[dict[str, ClampedLane | None]] = field(default_factory=lambda: [{}])

    # ------------------------------------------------------------------ entry
    def emit(self) -> None:
        stmts = self._start()
        components = ", ".join(str(k) for k in range(self.width))
        self.body.line(
            f"const int{self.width} {_LANE} = (int{self.width})({components});",
            comment=f"foreach ({self.lanes.var} in {self.width} {self.lanes.group}): the "
            "lanes of one vector",
        )
        with self._nested():
            self.body.printer.scope.declare(CVar(self.lanes.var, INT, kind="index"))
            for s in stmts:
                self.stmt(s)

    def _start(self) -> tuple[Stmt, ...]:
        """The body's statements, classified (`_classify`), after the preprocessor guard
        that the lane count of named constants is the vector width the code assumes."""
        stmts = _stmts(self.lanes.body)
        self._classify(stmts)
        count_names = sorted(
            n.name for n in walk(self.lanes.count)
            if isinstance(n, Name) and self.body.is_constant(n.name)
        )
        for directive in guard(count_names, self.body.constants, "lane vectors").splitlines():
            self.body.out.append(Directive(directive))
        return stmts

    # ------------------------------------------------------------------ analysis
    def _classify(self, stmts: tuple[Stmt, ...]) -> None:
        """Which names are varying (mcl.mcpl.varying, the rule the barrier check uses): the
        lane index, the private arrays declared in the body and whatever the body assigns
        or computes from them (by name: a shadowed name is varying if any of its
        declarations is)."""
        for n in (n for s in stmts for n in walk(s)):
            if isinstance(n, Decl):
                self.declared.add(n.name)
                if isinstance(n.type, ArrayType):
                    self.lane_arrays.add(n.name)
        self.written = {name for s in stmts for name in assigned_names(s)}
        self.varying = varying_names(stmts, {self.lanes.var} | self.lane_arrays)

    def is_varying(self, e: Expr) -> bool:
        return any(isinstance(n, Name) and n.name in self.varying for n in walk(e))

    def _affine(self, name: str) -> ClampedLane | None:
        for frame in reversed(self.affine):
            if name in frame:
                return frame[name]
        return None

    @contextmanager
    def _nested(self) -> Iterator[None]:
        self.affine.append({})
        try:
            with self.body.nested():
                yield
        finally:
            self.affine.pop()

    @property
    def typed(self) -> Typed:
        """Builds the offsets this emitter computes, typed by the checker's rules."""
        return self.body.printer.scope.typed

    def _kind(self, e: Expr) -> Prim:
        t = self.body.printer.scope.type_of(e)
        if t == INT or t == Prim("bool"):
            return INT
        if t == FLOAT:
            return FLOAT
        raise NotVectorisable(f"a varying value of type {t} (only float and int lanes)")

    def _lane_base(self, offset: Expr) -> Expr | None:
        """`offset` at lane 0 when it is `base + lane` (base uniform), else None. Lane-
        affine ints (`int j = base + vj`) count as their base plus the lane; the
        constants stay symbols, so the proof holds for any value a build gives them."""
        names = {n.name for n in walk(offset) if isinstance(n, Name)}
        varying = names & self.varying
        bases = {v: self._affine(v) for v in varying - {self.lanes.var}}
        if not varying or any(a is None or a.limit is not None for a in bases.values()):
            return None
        if not _only_linear(offset, varying):
            return None
        expr = _sympy(offset, self.lanes.var, {})
        lane = sympy.Symbol(self.lanes.var, integer=True)
        for v in varying - {self.lanes.var}:
            expr = expr.subs(sympy.Symbol(f"n_{v}", integer=True),
                             sympy.Symbol(f"n_{v}", integer=True) + lane)
        expanded = sympy.expand(expr)
        if sympy.expand(expanded - expanded.subs(lane, 0)) != lane:
            return None

        def at_lane_zero(node: object) -> object | None:
            if isinstance(node, Name) and node.name == self.lanes.var:
                return self.typed.int_lit(0)
            if isinstance(node, Name) and node.name in bases:
                affine = bases[node.name]
                assert affine is not None
                return self.typed.name(affine.base, T.INT)  # an affine int's base
            return None

        return self.body.printer.scope.tables.rewrite(offset, at_lane_zero)

    def _clamped(self, offset: Expr) -> tuple[Expr, ClampedLane] | None:
        """`offset` = S + j with S uniform and j a clamped lane-affine int: (S + j's base,
        j's ClampedLane)."""
        names = {n.name for n in walk(offset) if isinstance(n, Name)}
        varying = names & self.varying
        if len(varying) != 1:
            return None
        (j,) = varying
        affine = self._affine(j)
        if affine is None or affine.limit is None or not _only_linear(offset, varying):
            return None
        expr = sympy.expand(_sympy(offset, j, {}))
        symbol = sympy.Symbol(j, integer=True)
        if sympy.expand(expr - expr.subs(symbol, 0)) != symbol:
            return None
        base = affine.base
        start = self.body.printer.scope.tables.rewrite(
            offset,
            lambda n: self.typed.name(base, T.INT) if isinstance(n, Name) and n.name == j
            else None,
        )
        return start, affine

    # ------------------------------------------------------------------ expressions
    def x(self, e: Expr, prec: int = 0) -> str:
        """`e` as C: a scalar when uniform, a vector expression when varying; in
        parentheses where it could not stand as an operand of an operator of `prec`."""
        text, p = self._p(e)
        return f"({text})" if p < prec else text

    def _p(self, e: Expr) -> tuple[str, int]:
        if not self.is_varying(e):
            return self.body.printer._p(e)
        match e:
            case Name():
                if e.name == self.lanes.var:
                    return _LANE, 100
                return self.body.printer._p(e)
            case Unary():
                self._kind(e.operand)
                operand = self.x(e.operand, UNARY)
                return f"{e.op}({operand})", UNARY
            case Binary():
                return self._binary(e)
            case Call() if e.func in ("min", "max") and len(e.args) == 2:
                if any(self._kind(a) != INT for a in e.args):
                    raise NotVectorisable(f"{e.func} of floats (fmin's NaN rules)")
                a, b = (self.x(arg, 100) for arg in e.args)
                op = "<" if e.func == "min" else ">"
                return f"{a} {op} {b} ? {a} : {b}", 0
            case Index():
                return self._load(e), 100
            case (Call() | ast.Field() | ast.IntLit() | ast.FloatLit() | ast.BoolLit()
                  | ast.HwdConst()):
                # Literals are never varying; a varying field or call has no vector form.
                raise NotVectorisable(f"a varying {type(e).__name__}")
            case _:
                unknown_node(e, "the lane printer")

    def _binary(self, e: Binary) -> tuple[str, int]:
        if e.op == "^" or (e.op == "%" and self._kind(e) == FLOAT):
            raise NotVectorisable(f"a varying '{e.op}' (a built-in function in C)")
        if e.op in ("&&", "||"):
            # Vector && and || evaluate both sides in every lane: the right side must be
            # safe where a work-item would have skipped it.
            self._computable_in_every_lane(e.right, "the right side of a varying " + e.op)
        kinds = {self._kind(side) for side in (e.left, e.right) if self.is_varying(side)}
        other = [side for side in (e.left, e.right) if not self.is_varying(side)]
        if len(kinds) > 1 or (
            kinds == {INT} and any(self._kind(side) == FLOAT for side in other)
        ):
            raise NotVectorisable("varying ints and floats in one operation")
        prec = BINARY_PRECEDENCE[e.op]
        sides = []
        for side, p in ((e.left, prec), (e.right, prec + 1)):
            text = self.x(side, p)
            if not self.is_varying(side) and kinds == {FLOAT} and self._kind(side) == INT:
                text = f"(float)({text})"
            sides.append(text)
        return f"{sides[0]} {e.op} {sides[1]}", prec

    def _array(self, e: Index) -> tuple[CVar, Prim, list[Expr], list[Expr]]:
        """The array variable, its element type (float or int), the indices and the
        array's dimensions."""
        base, indices = index_chain(e)
        if not isinstance(base, Name):
            raise NotVectorisable("an access through an expression")
        var = self.body.printer.scope.lookup(base.name, e.span)
        if not isinstance(var.type, ArrayType) or var.type.element not in (FLOAT, INT):
            raise NotVectorisable(f"an access to '{base.name}' (not an array of float or int)")
        dims = flat_dims(var.type)
        if len(indices) != len(dims):
            raise NotVectorisable("a sub-array")
        return var, var.type.element, indices, dims

    def _load(self, e: Index) -> str:
        var, element_type, indices, dims = self._array(e)
        if var.name in self.lane_arrays:
            if any(self.is_varying(i) for i in indices):
                raise NotVectorisable(f"'{var.name}' indexed by the lane")
            return self.body.printer.expr(e)
        offset = linear_offset(indices, dims, self.typed)
        pointer = var.cname
        base = self._lane_base(offset)
        element = "float" if element_type == FLOAT else "int"
        if base is not None:
            return self._vload(f"&{pointer}[{self.body.printer.expr(base)}]", element)
        gathered = self._gather(pointer, self.x(offset), element)
        clamped = self._clamped(offset)
        if clamped is None:
            return gathered
        start, affine = clamped
        vector = self._vload(f"&{pointer}[{self.body.printer.expr(start)}]", element)
        return f"({affine.base} + {self.width - 1} <= {affine.limit} ? {vector} : {gathered})"

    def _vload(self, address: str, element: str) -> str:
        if self.width <= _HALF:
            return f"vload{self.width}(0, {address})"
        halves = f"vload{_HALF}(0, {address}), vload{_HALF}(1, {address})"
        return f"({element}{self.width})({halves})"

    def _gather(self, pointer: str, index: str, element: str) -> str:
        parts = ", ".join(f"{pointer}[({index}).s{c}]" for c in _COMPONENTS[: self.width])
        return f"({element}{self.width})({parts})"

    # ------------------------------------------------------------------ statements
    def stmt(self, s: Stmt) -> None:
        match s:
            case Block():
                with self.body.braced("{"), self._nested():
                    for st in s.stmts:
                        self.stmt(st)
            case Decl():
                self._decl(s)
            case Assign():
                self._assign(s)
            case IncDec():
                if self.is_varying(s.target) and not isinstance(s.target, Name):
                    raise NotVectorisable("++ on an array element of the lanes")
                self._own(s.target)
                self.body.line(f"{self.x(s.target)}{s.op};", s.span)
            case For():
                self._for(s)
            case ast.If():
                self._if(s)
            case (ast.ViewDecl() | ast.CallStmt() | ast.Swap() | ast.Foreach() | ast.Barrier()
                  | ast.Return()):
                raise NotVectorisable(f"a {type(s).__name__} statement in the lanes")
            case _:
                unknown_node(s, "the lane printer")

    def _own(self, target: Expr) -> None:
        """Writes go to variables declared in the lane body or to elements of shared
        arrays (a variable of an outer level is one per work-item: it has no lanes)."""
        if isinstance(target, Name) and target.name in self.declared:
            return
        root = self.body.printer.scope.root_var(target)
        if isinstance(target, Index) and root is not None and (
            root.name in self.lane_arrays or root.address_space in ("global", "local")
        ):
            return
        raise NotVectorisable("a write to a variable declared outside the lanes")

    def _decl(self, d: Decl) -> None:
        scope = self.body.printer.scope
        if d.view is not None or d.const and isinstance(d.type, ArrayType):
            raise NotVectorisable("a view or constant array in the lanes")
        if isinstance(d.type, ArrayType):
            space, address_space = self.body.spaces.resolve(d.spaces, ARRAY, d.span)
            if address_space != "private" or d.type.element not in (FLOAT, INT):
                raise NotVectorisable(f"array '{d.name}' (not private float or int)")
            size = self.body.constant_size(d.type, d.name, d.span)
            var = scope.declare(CVar(d.name, d.type, "private", space))
            element = "float" if d.type.element == FLOAT else "int"
            self.body.line(f"{element}{self.width} {var.cname}[{size}];", d.span)
            return
        if d.name not in self.varying:
            self.body.line(f"{self.body.scalar_decl_text(d)};", d.span)
            return
        if d.type not in (FLOAT, INT):
            raise NotVectorisable(f"varying '{d.name}' of type {d.type}")
        if d.init is not None and self.is_varying(d.init) and self._kind(d.init) != d.type:
            raise NotVectorisable(f"'{d.name}' takes a value of another type")
        init = f" = {self.x(d.init)}" if d.init is not None else ""
        space, _ = self.body.spaces.resolve(d.spaces, SCALAR, d.span)
        element = "float" if d.type == FLOAT else "int"
        self.affine[-1][d.name] = None
        if d.type == INT and d.init is not None and d.name not in self.written:
            self._affine_decl(d, d.init)
        var = scope.declare(CVar(d.name, d.type, "private", space))
        const = "const " if d.const else ""
        self.body.line(f"{const}{element}{self.width} {var.cname}{init};", d.span)

    def _affine_decl(self, d: Decl, init: Expr) -> None:
        """`int j = base + vj` or `min(base + vj, limit)`: declare base (and limit) as
        scalars next to j, so accesses through j can be proven contiguous."""
        limit: Expr | None = None
        inner = init
        if isinstance(init, Call) and init.func == "min" and len(init.args) == 2:
            a, b = init.args
            inner, limit = (a, b) if not self.is_varying(b) else (b, a)
            if self.is_varying(limit):
                return
        base = self._lane_base(inner)
        if base is None:
            return
        scope = self.body.printer.scope
        base_var = scope.declare(CVar(f"{d.name}_lane0", INT, "private"))
        self.body.line(f"const int {base_var.cname} = {self.body.printer.expr(base)};")
        limit_name = None
        if limit is not None:
            limit_var = scope.declare(CVar(f"{d.name}_limit", INT, "private"))
            self.body.line(f"const int {limit_var.cname} = {self.body.printer.expr(limit)};")
            limit_name = limit_var.cname
        self.affine[-1][d.name] = ClampedLane(base_var.cname, limit_name)

    def _assign(self, s: Assign) -> None:
        self._own(s.target)
        if s.op == "%=" and (self.is_varying(s.target) or self.is_varying(s.value)):
            raise NotVectorisable("a varying %=")
        if isinstance(s.target, Index):
            var, element_type, indices, dims = self._array(s.target)
            if var.name not in self.lane_arrays and (
                self.is_varying(s.value) or any(self.is_varying(i) for i in indices)
            ):
                self._store(var, element_type, linear_offset(indices, dims, self.typed), s,
                            None)
                return
            if var.name in self.lane_arrays and any(self.is_varying(i) for i in indices):
                raise NotVectorisable(f"'{var.name}' indexed by the lane")
            if var.name not in self.lane_arrays:
                # Every lane stores the same value into one element (the checker's
                # mcpl-write-race): one scalar store does what each of them would. An
                # update (`+=`) by every lane is not one update: those keep work-items.
                if s.op != "=":
                    raise NotVectorisable(f"'{s.op}' by every lane into one element")
                target = self.body.printer.expr(s.target)
                self.body.line(f"{target} = {self.x(s.value)};", s.span)
                return
        if self.is_varying(s.value) and self._kind(s.value) != self._kind(s.target):
            raise NotVectorisable("an assignment of another type")
        self.body.line(f"{self.x(s.target)} {s.op} {self.x(s.value)};", s.span)

    def _store(
        self, var: CVar, element_type: Prim, offset: Expr, s: Assign,
        mask: str | None,
    ) -> None:
        """A store of the lanes into a shared array: one vector store when contiguous and
        unmasked, else one scalar store per (allowed) lane."""
        if s.op != "=":
            raise NotVectorisable(f"'{s.op}' into a shared array")
        if not self.is_varying(offset):
            raise NotVectorisable("all lanes store to one element")
        element = "float" if element_type == FLOAT else "int"
        value = self.x(s.value)
        if self.is_varying(s.value) and self._kind(s.value) != element_type:
            raise NotVectorisable("a store of another type")
        base = self._lane_base(offset) if mask is None else None
        if base is not None:
            address = f"&{var.cname}[{self.body.printer.expr(base)}]"
            vector = f"({element}{self.width})({value})"
            if self.width <= _HALF:
                self.body.line(f"vstore{self.width}({vector}, 0, {address});", s.span)
            else:
                # One line opens the braces and the second store closes them.
                with self.body.braced(f"{{ const {element}{self.width} mcl_v = {vector};",
                                      s.span, close=None):
                    self.body.line(f"vstore{_HALF}(mcl_v.lo, 0, {address});")
                    self.body.line(f"vstore{_HALF}(mcl_v.hi, 1, {address}); }}")
            return
        with self.body.braced("{", s.span):
            self.body.line(f"const int{self.width} mcl_i = {self.x(offset)};")
            self.body.line(f"const {element}{self.width} mcl_v = {value};")
            for c in _COMPONENTS[: self.width]:
                store = f"{var.cname}[mcl_i.s{c}] = mcl_v.s{c};"
                self.body.line(f"if ({mask}.s{c}) {store}" if mask else store)

    def _for(self, s: For) -> None:
        if self.is_varying(s.cond) or s.var in self.varying:
            raise NotVectorisable("a loop whose trip count depends on the lane")
        unroll = self.body.unroll(
            for_trip_count(s, self.body.constants, self.body.is_constant))
        with self._nested(), self.body.braced(f"for ({self.body.for_header(s)}) {{", s.span,
                                              loop=True, unroll=unroll), self._nested():
            for st in _stmts(s.body):
                self.stmt(st)

    def _if(self, s: ast.If) -> None:
        if not self.is_varying(s.cond):
            with self.body.braced(f"if ({self.body.x(s.cond)}) {{", s.span) as node:
                with self._nested():
                    for st in _stmts(s.then):
                        self.stmt(st)
            if s.orelse is not None:
                with self.body.section(node, "} else {"), self._nested():
                    for st in _stmts(s.orelse):
                        self.stmt(st)
            return
        # A condition that differs between lanes: only stores into shared arrays, one
        # scalar store per lane whose condition holds (the other lanes do nothing).
        with self.body.braced("{", s.span):
            self.body.line(f"const int{self.width} mcl_mask = {self.x(s.cond)};")
            for branch, mask in ((s.then, "mcl_mask"), (s.orelse, "!mcl_mask")):
                for st in _stmts(branch) if branch is not None else ():
                    if not (isinstance(st, Assign) and isinstance(st.target, Index)):
                        raise NotVectorisable(
                            "a statement other than a store under a varying if")
                    var, element_type, indices, dims = self._array(st.target)
                    if var.name in self.lane_arrays:
                        raise NotVectorisable("a private array written under a varying if")
                    self._own(st.target)
                    for e in (st.value, *indices):
                        self._computable_in_every_lane(e)
                    self._store(var, element_type, linear_offset(indices, dims, self.typed),
                                st, mask="mcl_mask" if mask == "mcl_mask" else "(!mcl_mask)")

    def _computable_in_every_lane(self, e: Expr, where: str = "a varying if") -> None:
        """Under a varying `if` (and on the right of a varying && or ||) an expression is
        computed in every lane, also in those whose work-item would not have computed it:
        so it may not read a shared array (the index may lie outside it there) nor divide
        (by a zero)."""
        for n in walk(e):
            root = self.body.printer.scope.root_var(n) if isinstance(n, Index) else None
            if root is not None and root.name not in self.lane_arrays:
                raise NotVectorisable(f"a read of a shared array in {where}")
            if isinstance(n, Binary) and n.op in ("/", "%"):
                raise NotVectorisable(f"a division in {where}")


def _only_linear(e: Expr, names: set[str]) -> bool:
    """The names appear only under +, - and * (so a symbolic expansion sees them)."""

    def visit(node: Expr, linear: bool) -> bool:
        match node:
            case Name():
                return linear or node.name not in names
            case Binary():
                inner = linear and node.op in ("+", "-", "*")
                return visit(node.left, inner) and visit(node.right, inner)
            case Unary():
                return visit(node.operand, linear and node.op == "-")
        return not any(isinstance(n, Name) and n.name in names for n in walk(node))

    return visit(e, True)


def _stmts(s: Stmt) -> tuple[Stmt, ...]:
    return s.stmts if isinstance(s, Block) else (s,)

