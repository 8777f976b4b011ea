"""The lanes of a CPU leaf as GCC/Clang vector types (paper section 4.4: a par_group of
vector lanes is the SIMD unit of a core).

mcl.codegen.lanes decides what becomes vector code and proves it; this subclass only
spells its vectors in C with vector extensions instead of OpenCL C. The differences:
a vector literal is `(int16){0, 1, ...}`, a component is `v[3]`, contiguous accesses
are `mcl_vload_float16(p)` / `mcl_vstore_float16(p, v)` (any alignment, prelude.py), a
uniform value becomes a vector only by an operation with one (C converts no scalar to a
vector on assignment: `x = 0` is written `x = mcl_zero_float + 0`), and C has no `?:`,
`!`, `&&` or `||` on vectors (a selection is `(m & a) | (~m & b)` on the comparison's
mask, a logical operation one on masks).
"""

from __future__ import annotations

from dataclasses import replace

from mcl.backends.openmp.prelude import vector_name, vload, vstore
from mcl.codegen.lanes import LaneEmitter, NotVectorisable
from mcl.codegen.scope import FLOAT, INT, CVar
from mcl.mcpl import types as T
from mcl.mcpl.ast import (
    BINARY_PRECEDENCE,
    ArrayType,
    Assign,
    Binary,
    Call,
    Decl,
    Expr,
    Prim,
    Unary,
)

_LANE = "mcl_lane"
# Vectors of zeros a uniform value is added to where it becomes varying (-0.0: x + -0.0
# is x for every float x, +0.0 included).
_ZERO = {"float": "mcl_zero_float", "int": "mcl_zero_int"}


def _element(kind: Prim) -> str:
    return "float" if kind == FLOAT else "int"


class CLaneEmitter(LaneEmitter):
    """LaneEmitter with C vector-extension spellings."""

    def emit(self) -> None:
        stmts = self._start()
        w = self.width
        components = ", ".join(str(k) for k in range(w))
        self.body.line(
            f"const int{w} {_LANE} = (int{w}){{{components}}};",
            comment=f"foreach ({self.lanes.var} in {w} {self.lanes.group}): the lanes of one "
            "vector",
        )
        with self._nested():
            scope = self.body.printer.scope
            scope.declare(CVar(self.lanes.var, INT, kind="index"))
            zero_float = scope.declare(CVar(_ZERO["float"], FLOAT)).cname
            zero_int = scope.declare(CVar(_ZERO["int"], INT)).cname
            float_zeros = ", ".join(["-0.0f"] * w)
            self.body.line(f"const float{w} {zero_float} = {{{float_zeros}}};")
            self.body.line(f"const int{w} {zero_int} = {{0}};")
            self.varying |= set(_ZERO.values())
            for s in stmts:
                self.stmt(s)

    # ------------------------------------------------------------------ uniform -> vector
    def _as_varying(self, value: Expr, kind: Prim) -> Expr:
        """`value` (uniform) as a varying expression of `kind`: added to a vector of zeros."""
        zero = self.typed.name(_ZERO[_element(kind)], T.FLOAT if kind == FLOAT else T.INT)
        return self.typed.binary("+", zero, value, span=value.span)

    def _decl(self, d: Decl) -> None:
        if (d.name in self.varying and d.init is not None and not self.is_varying(d.init)
                and not isinstance(d.type, ArrayType) and d.type in (FLOAT, INT)):
            d = replace(d, init=self._as_varying(d.init, d.type))
        super()._decl(d)

    def _assign(self, s: Assign) -> None:
        if s.op == "=" and self.is_varying(s.target) and not self.is_varying(s.value):
            target = self.body.printer.scope.root_var(s.target)
            if target is not None and (target.name in self.lane_arrays
                                       or target.name in self.declared):
                kind = self._kind(s.target)
                s = replace(s, value=self._as_varying(s.value, kind))
        super()._assign(s)

    # ------------------------------------------------------------------ expressions
    def _p(self, e: Expr) -> tuple[str, int]:
        if not self.is_varying(e):
            return super()._p(e)
        match e:
            case Call() if e.func in ("min", "max") and len(e.args) == 2:
                if any(self._kind(a) != INT for a in e.args):
                    raise NotVectorisable(f"{e.func} of floats (fmin's NaN rules)")
                a, b = (self.x(arg, 100) for arg in e.args)
                op = "<" if e.func == "min" else ">"
                # The comparison's mask (-1 where it holds) selects a, its complement b.
                return f"(({a} {op} {b}) & {a}) | (~({a} {op} {b}) & {b})", BINARY_PRECEDENCE["|"]
            case Unary() if e.op == "!":
                self._kind(e.operand)
                return f"{self.x(e.operand, BINARY_PRECEDENCE['=='])} == 0", BINARY_PRECEDENCE["=="]
            case Binary() if e.op in ("&&", "||"):
                self._computable_in_every_lane(e.right, "the right side of a varying " + e.op)
                masks = [self._mask(side) for side in (e.left, e.right)]
                op = "&" if e.op == "&&" else "|"
                return f"{masks[0]} {op} {masks[1]}", BINARY_PRECEDENCE[op]
        return super()._p(e)

    def _mask(self, e: Expr) -> str:
        """`e` as a mask: -1 where it is true, 0 where false (OpenCL's vector truth)."""
        self._kind(e)
        text = f"({self.x(e, 100)} != 0)"
        return text if self.is_varying(e) else f"(-{text})"

    def _vload(self, address: str, element: str) -> str:
        return f"{vload(element, self.width)}({address})"

    def _gather(self, pointer: str, index: str, element: str) -> str:
        parts = ", ".join(f"{pointer}[({index})[{c}]]" for c in range(self.width))
        return f"({vector_name(element, self.width)}){{{parts}}}"

    # ------------------------------------------------------------------ stores
    def _store(
        self, var: CVar, element_type: Prim, offset: Expr, s: Assign,
        mask: str | None,
    ) -> None:
        if s.op != "=":
            raise NotVectorisable(f"'{s.op}' into a shared array")
        if not self.is_varying(offset):
            raise NotVectorisable("all lanes store to one element")
        if self.is_varying(s.value) and self._kind(s.value) != element_type:
            raise NotVectorisable("a store of another type")
        element = _element(element_type)
        vector = vector_name(element, self.width)
        value = s.value if self.is_varying(s.value) else self._as_varying(s.value, element_type)
        value_text = self.x(value)
        base = self._lane_base(offset) if mask is None else None
        if base is not None:
            address = f"&{var.cname}[{self.body.printer.expr(base)}]"
            self.body.line(f"{vstore(element, self.width)}({address}, {value_text});", s.span)
            return
        with self.body.braced("{", s.span):
            self.body.line(f"const int{self.width} mcl_i = {self.x(offset)};")
            self.body.line(f"const {vector} mcl_v = {value_text};")
            # LaneEmitter._if passes the mask of the branch: `mcl_mask` or `(!mcl_mask)`.
            negated = mask is not None and mask.startswith("(!")
            name = mask.strip("(!)") if mask is not None else None
            for c in range(self.width):
                store = f"{var.cname}[mcl_i[{c}]] = mcl_v[{c}];"
                if name is not None:
                    store = f"if ({'!' if negated else ''}{name}[{c}]) {store}"
                self.body.line(store)

