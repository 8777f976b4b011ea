"""Compile MCPL expressions into Python closures, once per function.

Dispatching on node types at every evaluation would make the interpreter several times
slower; instead each expression becomes a closure `fn(frame) -> value`, specialised for
its static types (the type decides the arithmetic: C integer division, float32 rounding).

Frames: every function call and every foreach unit has its own frame, a Python list whose
slot 0 links to the enclosing frame (the parent unit's, or None for a function). A
variable is found at compile time as (levels up, slot), so access costs a few list
indexings. Declarations inside a foreach unit therefore belong to that unit, and
declarations at a par_group level (`local float[n] t;` inside `foreach blocks`) live in
the frame that the units below share (mcpl.md §5 rule 4).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mcl.diagnostics import MclError, Span, error
from mcl.interp.natives import NATIVES
from mcl.interp.program import is_library_stub
from mcl.interp.values import (
    DTYPES,
    POISON,
    StructValue,
    convert,
    scalar_name,
    wider,
)
from mcl.mcpl import ast
from mcl.mcpl import operators as ops
from mcl.mcpl.builtins import BUILTINS
from mcl.mcpl.visitor import StrictVisitor

if TYPE_CHECKING:
    from mcl.interp.engine import Engine

Frame = list
Fn = Callable[[Frame], Any]
_NOT_CONST = object()

PRIM = {name: ast.Prim(name) for name in ("int", "float", "double", "bool", "byte", "void")}


def fail(code: str, message: str, span: Span | None, hint: str | None = None) -> MclError:
    return MclError(error(f"interp-{code}", message, span, hint))


@dataclass(frozen=True)
class CExpr:
    """A compiled expression: closure, static type, and the value when it is constant."""

    fn: Fn
    type: ast.Type
    const: object = _NOT_CONST

    @property
    def is_const(self) -> bool:
        return self.const is not _NOT_CONST

    @property
    def scalar(self) -> str | None:
        return scalar_name(self.type)


def constant(value: object, t: ast.Type) -> CExpr:
    return CExpr(lambda _f: value, t, value)


def _folded(e: CExpr) -> CExpr:
    """`e` with constant operands, computed now. An operation that fails (`1 << 40`,
    `1 / 0`) stays a run-time operation: code that never runs must not be an error."""
    try:
        return constant(e.fn([]), e.type)
    except MclError:
        return e


def _negate_int(fn: Fn, span: Span | None) -> Fn:
    def negate(f: Frame) -> int:
        v = -fn(f)
        if v <= ops.INT_MAX:
            return v
        raise _int_overflow(f"-({-v})", span)

    return negate


@dataclass
class Var:
    name: str
    level: int  # frame level (0 = function frame, +1 per enclosing foreach unit)
    slot: int
    type: ast.Type
    const: bool = False


def frame_loader(up: int, slot: int) -> Fn:
    """Closure reading slot `slot` of the frame `up` levels above the current one."""
    if up == 0:
        return lambda f: f[slot]
    if up == 1:
        return lambda f: f[0][slot]
    if up == 2:
        return lambda f: f[0][0][slot]

    def load(f: Frame) -> Any:
        for _ in range(up):
            f = f[0]
        return f[slot]

    return load


def frame_getter(up: int) -> Fn:
    """Closure returning the frame `up` levels above the current one."""
    if up == 0:
        return lambda f: f
    if up == 1:
        return lambda f: f[0]

    def get(f: Frame) -> Frame:
        for _ in range(up):
            f = f[0]
        return f

    return get


def element_reader(t: ast.Type) -> Callable[[Any], Any] | None:
    """Conversion applied to a value read from a numpy array (None: use as is)."""
    name = scalar_name(t)
    if name in ("int", "byte"):
        return int
    if name == "bool":
        return bool
    return None


def caster(from_t: ast.Type, to_t: ast.Type, span: Span | None) -> Callable[[Any], Any] | None:
    """Conversion for storing a value of `from_t` into `to_t` (None when nothing to do)."""
    src, dst = scalar_name(from_t), scalar_name(to_t)
    if src is None or dst is None:
        if src != dst:
            raise fail("type", f"cannot convert {_type_str(from_t)} to {_type_str(to_t)}", span)
        return None
    if src == dst and dst not in ("byte",):
        return None

    def cast(v: Any) -> Any:
        try:
            return convert(v, dst)
        except (OverflowError, ValueError) as exc:
            raise fail("conversion", f"conversion to {dst}: {exc}", span) from None

    return cast


def _type_str(t: ast.Type) -> str:
    if isinstance(t, ast.Prim):
        return t.name
    if isinstance(t, ast.NamedType):
        return t.name
    return _type_str(t.element) + "[]" * len(t.dims)


def with_cast(e: CExpr, to: ast.Type, node: ast.Expr | None, span: Span | None) -> CExpr:
    """`e` converted to type `to`. A float literal converted to double keeps its full
    decimal precision (as C's double literals), not the float32 rounding."""
    dst = scalar_name(to)
    if dst == "double" and isinstance(node, ast.FloatLit):
        return constant(np.float64(node.value), to)
    if (
        dst == "double"
        and isinstance(node, ast.Unary)
        and node.op == "-"
        and isinstance(node.operand, ast.FloatLit)
    ):
        return constant(np.float64(-node.operand.value), to)
    cast = caster(e.type, to, span)
    if cast is None:
        return CExpr(e.fn, to, e.const) if e.scalar is not None else e
    if e.is_const:
        return constant(cast(e.const), to)
    fn = e.fn
    return CExpr(lambda f: cast(fn(f)), to)


class ExprCompiler(StrictVisitor):
    """Scopes, variable slots and expression compilation for one function body."""

    def __init__(self, engine: Engine, function: ast.Function, module: ast.Module):
        self.engine = engine
        self.function = function
        self.module = module
        self.scopes: list[dict[str, Var]] = [{}]
        self.level = 0
        self.slot_counts = [1]  # per open frame level; slot 0 is the parent link

    # -- variables --------------------------------------------------------------------
    def declare(self, name: str, t: ast.Type, const: bool = False) -> Var:
        slot = self.slot_counts[self.level]
        self.slot_counts[self.level] += 1
        var = Var(name, self.level, slot, t, const)
        self.scopes[-1][name] = var
        return var

    def lookup(self, name: str) -> Var | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def loader(self, var: Var) -> Fn:
        return frame_loader(self.level - var.level, var.slot)

    # -- types ------------------------------------------------------------------------
    def type_def(self, t: ast.NamedType, span: Span | None) -> ast.TypeDef:
        found = self.engine.scope.type_def(t.name, self.module)
        if found is None:
            raise fail("unknown-name", f"unknown type '{t.name}'", span)
        return found

    def field_type(self, t: ast.Type, name: str, span: Span | None) -> ast.Type:
        if not isinstance(t, ast.NamedType):
            raise fail("type", f"field access '.{name}' on a value of type {_type_str(t)}", span)
        for decl in self.type_def(t, span).fields:
            if decl.name == name:
                return decl.type
        raise fail("unknown-name", f"type {t.name} has no field '{name}'", span)

    def shape_fn(self, t: ast.ArrayType) -> Fn:
        """Closure computing the concatenated numpy shape of an array type's sizes."""
        sizes = [with_cast(self.expr(e), PRIM["int"], e, e.span) for group in t.dims for e in group]
        if all(s.is_const for s in sizes):
            shape = tuple(int(s.const) for s in sizes)  # type: ignore[call-overload]
            return lambda _f: shape
        fns = [s.fn for s in sizes]
        return lambda f: tuple(fn(f) for fn in fns)

    def allocator(self, t: ast.Type, span: Span | None) -> Fn | None:
        """Closure creating a fresh (poisoned) value of type `t`; None for scalars."""
        if isinstance(t, ast.ArrayType):
            shape = self.shape_fn(t)
            element = t.element
            if isinstance(element, ast.NamedType):
                make = self.allocator(element, span)
                assert make is not None

                def alloc_structs(f: Frame) -> np.ndarray:
                    array = np.empty(_checked_shape(shape(f), span), dtype=object)
                    for index in np.ndindex(array.shape):
                        array[index] = make(f)
                    return array

                return alloc_structs
            dtype, poison = DTYPES[element.name], POISON[element.name]

            def alloc(f: Frame) -> np.ndarray:
                size = _checked_shape(shape(f), span)
                try:
                    return np.full(size, poison, dtype=dtype)
                except MemoryError:
                    raise fail("size", f"no memory for an array of shape {size}", span) from None

            return alloc
        if isinstance(t, ast.NamedType):
            tdef = self.type_def(t, span)
            return self._struct_allocator(t, tdef, span)
        return None

    def _struct_allocator(self, t: ast.NamedType, tdef: ast.TypeDef, span: Span | None) -> Fn:
        # Type parameters (`type Tile(int n)`) are bound in a frame of their own, so field
        # sizes such as `float[n] data` can use them.
        saved = (self.scopes, self.level, self.slot_counts)
        self.scopes, self.level, self.slot_counts = [{}], 0, [1]
        try:
            params = [self.declare(p.name, p.type) for p in tdef.params]
            fields = []
            for decl in tdef.fields:
                make = self.allocator(decl.type, decl.span)
                poison = POISON.get(scalar_name(decl.type) or "", None)
                fields.append((decl.name, make, poison))
            nslots = self.slot_counts[0]
        finally:
            self.scopes, self.level, self.slot_counts = saved
        if len(t.args) != len(params):
            raise fail(
                "type", f"type {t.name} takes {len(params)} arguments, {len(t.args)} given", span
            )
        args = [
            with_cast(self.expr(a), p.type, a, a.span).fn
            for a, p in zip(t.args, params, strict=False)
        ]
        slots = [p.slot for p in params]
        name = t.name

        def alloc(f: Frame) -> StructValue:
            tf: Frame = [None] * nslots
            for slot, arg in zip(slots, args, strict=False):
                tf[slot] = arg(f)
            return StructValue(
                name, {n: (make(tf) if make else poison) for n, make, poison in fields}
            )

        return alloc

    # -- expressions ------------------------------------------------------------------
    def expr(self, e: ast.Expr) -> CExpr:
        return self.visit(e)

    def generic_visit(self, node: Any, *args: Any, **kwargs: Any) -> Any:
        # A node kind of the AST with no rule here (unknown kinds fail in `visit`).
        raise fail("unsupported", f"cannot run {type(node).__name__}", node.span)

    def visit_IntLit(self, e: ast.IntLit) -> CExpr:
        if not ops.INT_MIN <= e.value <= ops.INT_MAX:
            raise fail("int-overflow", f"the literal {e.value} does not fit in a 32-bit int",
                       e.span)
        return constant(e.value, PRIM["int"])

    def visit_FloatLit(self, e: ast.FloatLit) -> CExpr:
        return constant(np.float32(e.value), PRIM["float"])

    def visit_BoolLit(self, e: ast.BoolLit) -> CExpr:
        return constant(bool(e.value), PRIM["bool"])

    def visit_Name(self, e: ast.Name) -> CExpr:
        var = self.lookup(e.name)
        if var is not None:
            return CExpr(self.loader(var), var.type)
        found = self.engine.scope.constant(e.name, self.module)
        if found is not None:
            value, t = self.engine.constant_value(*found)
            return constant(value, t)
        raise fail("unknown-name", f"unknown name '{e.name}'", e.span)

    def visit_HwdConst(self, e: ast.HwdConst) -> CExpr:
        value = self.engine.hwd_constant(e.path, e.span)
        if isinstance(value, int) and not ops.INT_MIN <= value <= ops.INT_MAX:
            raise fail(
                "int-overflow",
                f"{'.'.join(e.path)} = {value} does not fit in a 32-bit int",
                e.span,
            )
        return constant(value, PRIM["int" if isinstance(value, int) else "double"])

    def visit_Field(self, e: ast.Field) -> CExpr:
        base = self.expr(e.base)
        t = self.field_type(base.type, e.name, e.span)
        fn, name = base.fn, e.name
        return CExpr(lambda f: fn(f).fields[name], t)

    def visit_Index(self, e: ast.Index) -> CExpr:
        base, indices, t, names = self._index_chain(e)
        read = element_reader(t) if not isinstance(t, ast.ArrayType) else None
        return CExpr(_index_reader(base.fn, indices, read, e.span, names), t)

    def _index_chain(self, e: ast.Index) -> tuple[CExpr, list[Fn], ast.Type, str]:
        """Collapse `d2[ti, tj][ei, ej]` into one numpy index (ti, tj, ei, ej) on `d2`."""
        chain: list[ast.Index] = []
        node: ast.Expr = e
        while isinstance(node, ast.Index):
            chain.append(node)
            node = node.base
        chain.reverse()
        base = self.expr(node)
        t = base.type
        indices: list[Fn] = []
        for step in chain:
            if not isinstance(t, ast.ArrayType):
                raise fail("type", f"indexing a value of type {_type_str(t)}", step.span)
            group = t.dims[0]
            if len(step.indices) != len(group):
                raise fail(
                    "type",
                    f"{len(step.indices)} indices given where the array's bracket group has "
                    f"{len(group)}",
                    step.span,
                )
            for index in step.indices:
                ci = self.expr(index)
                if ci.scalar not in ("int", "byte", "bool"):
                    raise fail("type", "array indices must be integers", index.span)
                indices.append(ci.fn)
            t = ast.ArrayType(t.element, t.dims[1:]) if len(t.dims) > 1 else t.element
        name = ast.root_name(e) or "array"
        return base, indices, t, name

    def visit_Unary(self, e: ast.Unary) -> CExpr:
        operand = self.expr(e.operand)
        fn = operand.fn
        if e.op == "!":
            result: CExpr = CExpr(lambda f: not fn(f), PRIM["bool"])
        elif e.op == "-":
            kind = operand.scalar
            if kind not in ("int", "byte", "float", "double", "bool"):
                raise fail("type", "unary '-' needs a number", e.span)
            t = PRIM["int"] if kind in ("byte", "bool") else operand.type
            result = CExpr(_negate_int(fn, e.span) if t == PRIM["int"] else lambda f: -fn(f), t)
        else:
            raise fail("unsupported", f"unknown unary operator '{e.op}'", e.span)
        if operand.is_const:
            return _folded(result)
        return result

    def visit_Binary(self, e: ast.Binary) -> CExpr:
        left, right = self.expr(e.left), self.expr(e.right)
        result = self.binary(e.op, left, right, e.left, e.right, e.span)
        if left.is_const and right.is_const:
            return _folded(result)
        return result

    def binary(
        self,
        op: str,
        left: CExpr,
        right: CExpr,
        left_node: ast.Expr | None,
        right_node: ast.Expr | None,
        span: Span | None,
    ) -> CExpr:
        """`left OP right` with C's conversions; shared by compound assignments."""
        lf, rf = left.fn, right.fn
        if op == "&&":
            return CExpr(lambda f: bool(lf(f)) and bool(rf(f)), PRIM["bool"])
        if op == "||":
            return CExpr(lambda f: bool(lf(f)) or bool(rf(f)), PRIM["bool"])
        lk, rk = left.scalar, right.scalar
        if lk is None or rk is None:
            raise fail("type", f"operator '{op}' needs scalar operands", span)
        if op in ("&", "|") and lk == "bool" and rk == "bool":
            logic = ops.INT_OPS[op]
            return CExpr(lambda f: bool(logic(lf(f), rf(f))), PRIM["bool"])
        kind = wider(lk, rk)
        if op in ops.COMPARISONS and lk == "bool" and rk == "bool":
            kind = "bool"
        lf = with_cast(left, PRIM[kind], left_node, span).fn
        rf = with_cast(right, PRIM[kind], right_node, span).fn
        if op in ops.COMPARISONS:
            return CExpr(_comparison(op, lf, rf), PRIM["bool"])
        if kind in ("int",):
            if op not in ops.INT_OPS:
                raise fail("type", f"operator '{op}' is not defined on integers", span)
            return CExpr(_int_arith(op, lf, rf, span), PRIM["int"])
        if op not in ops.FLOAT_OPS:
            raise fail("type", f"operator '{op}' needs integer operands", span)
        return CExpr(_float_arith(op, lf, rf), PRIM[kind])

    # -- calls ------------------------------------------------------------------------
    def visit_Call(self, e: ast.Call) -> CExpr:
        return self.call(e)

    def call(self, e: ast.Call) -> CExpr:
        target = self.engine.scope.function(e.func, self.module)
        if target is not None and not is_library_stub(target):
            return self._mcpl_call(e, target)
        if e.func in NATIVES:
            return self._native_call(e, target)
        if target is not None:
            raise fail(
                "unsupported",
                f"library function '{e.func}' has no implementation in the interpreter",
                e.span,
                hint="its body only states an access signature (mcl_builtin_read/write)",
            )
        raise fail("unknown-name", f"unknown function '{e.func}'", e.span)

    def _native_call(self, e: ast.Call, declared: ast.Function | None) -> CExpr:
        native = NATIVES[e.func]
        args = [self.expr(a) for a in e.args]
        if declared is not None:
            writes = _declared_writes(declared)
            if len(args) != len(declared.params):
                raise fail(
                    "arguments",
                    f"'{e.func}' takes {len(declared.params)} arguments, {len(args)} given",
                    e.span,
                )
        elif e.func in BUILTINS:
            builtin = BUILTINS[e.func]
            writes = {i for i, mode in enumerate(builtin.modes) if "w" in mode}
            if len(args) != builtin.arity:
                raise fail(
                    "arguments",
                    f"'{e.func}' takes {builtin.arity} arguments, {len(args)} given",
                    e.span,
                    hint=builtin.signature,
                )
        else:
            writes = set()
        kinds = []
        for a, node in zip(args, e.args, strict=False):
            if a.scalar is None:
                raise fail("type", f"'{e.func}' needs scalar arguments", node.span)
            kinds.append(a.scalar)
        operand_types, result_kind = native.typing(kinds)
        if declared is not None:
            # A library stub states the types: convert to its parameter types.
            operand_types = [
                None if i in writes else scalar_name(p.type) for i, p in enumerate(declared.params)
            ]
            declared_kind = scalar_name(declared.ret)
            if declared_kind not in (None, "void"):
                result_kind = declared_kind
        fns = [
            with_cast(a, PRIM[k], node, node.span).fn if k else a.fn
            for a, k, node in zip(args, operand_types, e.args, strict=False)
        ]
        impl = _positioned(native.fn, e.func, e.span, result_kind)
        if not writes:
            if len(fns) == 1:
                (a0,) = fns
                return CExpr(lambda f: impl([a0(f)])[0], PRIM[result_kind])
            return CExpr(lambda f: impl([fn(f) for fn in fns])[0], PRIM[result_kind])
        refs = {}
        for i in writes:
            if i >= len(e.args):
                continue
            ref, t = self.lvalue(e.args[i])
            refs[i] = (ref, caster(PRIM[kinds[i] if i < len(kinds) else "float"], t, e.span))

        def call_native(f: Frame) -> Any:
            located = {i: ref(f) for i, (ref, _) in refs.items()}
            result, outs = impl([fn(f) for fn in fns])
            for i, value in outs.items():
                container, key = located[i]
                cast = refs[i][1]
                try:
                    container[key] = cast(value) if cast else value
                except OverflowError:  # an int atomic past 32 bits, stored into an int array
                    raise fail(
                        "int-overflow", f"int overflow: '{e.func}' gives {value}", e.span
                    ) from None
            return result

        return CExpr(call_native, PRIM[result_kind])

    def _mcpl_call(self, e: ast.Call, target: ast.Function) -> CExpr:
        callee = self.engine.compiled(target)
        params = target.params
        if len(e.args) != len(params):
            raise fail(
                "arguments",
                f"'{target.name}' takes {len(params)} arguments, {len(e.args)} given",
                e.span,
            )
        fns: list[Fn] = []
        copy_back: list[tuple[int, Fn, Callable | None]] = []
        written = callee.written_params
        for i, (arg, param) in enumerate(zip(e.args, params, strict=False)):
            ca = self.expr(arg)
            if scalar_name(param.type) is not None:
                fns.append(with_cast(ca, param.type, arg, arg.span).fn)
                # Scalars are passed by reference unless constant (paper section 4.3);
                # copy-in/copy-out is equivalent because MCPL forbids aliasing.
                if param.name in written and not param.const and _is_lvalue(arg):
                    ref, t = self.lvalue(arg)
                    copy_back.append((i, ref, caster(param.type, t, arg.span)))
            else:
                fns.append(ca.fn)
        span = e.span

        if not copy_back:

            def call(f: Frame) -> Any:
                return callee.invoke([fn(f) for fn in fns], span)[0]

        else:

            def call(f: Frame) -> Any:
                located = [(i, ref(f), cast) for i, ref, cast in copy_back]
                result, frame = callee.invoke([fn(f) for fn in fns], span)
                for i, (container, key), cast in located:
                    value = frame[callee.param_slots[i]]
                    container[key] = cast(value) if cast else value
                return result

        return CExpr(call, target.ret)

    # -- lvalues ----------------------------------------------------------------------
    def lvalue(self, e: ast.Expr) -> tuple[Callable[[Frame], tuple[Any, Any]], ast.Type]:
        """Closure locating an assignable place as (container, key), so that
        `container[key]` reads it and `container[key] = v` writes it, and its type."""
        if isinstance(e, ast.Name):
            var = self.lookup(e.name)
            if var is None:
                if self.engine.scope.constant(e.name, self.module) is not None:
                    raise fail("const", f"cannot assign to constant '{e.name}'", e.span)
                raise fail("unknown-name", f"unknown name '{e.name}'", e.span)
            getter, slot = frame_getter(self.level - var.level), var.slot
            return (lambda f: (getter(f), slot)), var.type
        if isinstance(e, ast.Index):
            base, indices, t, name = self._index_chain(e)
            return _index_locator(base.fn, indices, e.span, name), t
        if isinstance(e, ast.Field):
            base = self.expr(e.base)
            t = self.field_type(base.type, e.name, e.span)
            fn, fname = base.fn, e.name
            return (lambda f: (fn(f).fields, fname)), t
        raise fail("type", "this expression cannot be assigned to", e.span)


def _positioned(
    impl: Callable[[list], Any], name: str, span: Span | None, result_kind: str
) -> Callable[[list], Any]:
    """A native whose arithmetic errors (`toInt` of NaN or of 1e30) are reported at the
    call, and whose int result (`abs(-2147483648)`) is checked against 32 bits."""
    check_int = result_kind == "int"

    def call(args: list) -> Any:
        try:
            out = impl(args)
        except (OverflowError, ValueError) as exc:
            raise fail("arithmetic", f"'{name}': {exc}", span) from None
        if check_int and isinstance(out[0], int) and not ops.INT_MIN <= out[0] <= ops.INT_MAX:
            raise fail("int-overflow", f"int overflow: '{name}' gives {out[0]}", span)
        return out

    return call


def _is_lvalue(e: ast.Expr) -> bool:
    return isinstance(e, (ast.Name, ast.Index, ast.Field))


def _declared_writes(function: ast.Function) -> set[int]:
    """Positions of parameters a library stub declares with `mcl_builtin_write`."""
    written: set[str] = set()
    for s in function.body.stmts:
        if isinstance(s, ast.CallStmt) and s.call.func == "mcl_builtin_write":
            written |= {a.name for a in s.call.args if isinstance(a, ast.Name)}
    return {i for i, p in enumerate(function.params) if p.name in written}


def _checked_shape(shape: tuple[int, ...], span: Span | None) -> tuple[int, ...]:
    if any(n < 0 for n in shape):
        raise fail("size", f"negative array size {shape}", span)
    return shape


def _oob(array: np.ndarray, index: tuple, span: Span | None, name: str) -> MclError:
    for dim, (i, n) in enumerate(zip(index, array.shape, strict=False)):
        if not 0 <= i < n:
            return fail(
                "index-out-of-bounds",
                f"index {i} is out of bounds for dimension {dim + 1} of '{name}' (size {n})",
                span,
            )
    return fail("index-out-of-bounds", f"index {index} is out of bounds for '{name}'", span)


def _index_reader(
    base: Fn, indices: list[Fn], read: Callable | None, span: Span | None, name: str
) -> Fn:
    """Closure reading `base[indices]` with bounds checks (numpy would wrap negatives)."""
    if len(indices) == 1:
        (i0,) = indices

        def read1(f: Frame) -> Any:
            a, i = base(f), i0(f)
            if i < 0:
                raise _oob(a, (i,), span, name)
            try:
                v = a[i]
            except IndexError:
                raise _oob(a, (i,), span, name) from None
            return read(v) if read else v

        return read1
    if len(indices) == 2:
        i0, i1 = indices

        def read2(f: Frame) -> Any:
            a, i, j = base(f), i0(f), i1(f)
            if i < 0 or j < 0:
                raise _oob(a, (i, j), span, name)
            try:
                v = a[i, j]
            except IndexError:
                raise _oob(a, (i, j), span, name) from None
            return read(v) if read else v

        return read2

    def read_n(f: Frame) -> Any:
        a = base(f)
        index = tuple(fn(f) for fn in indices)
        if any(i < 0 for i in index):
            raise _oob(a, index, span, name)
        try:
            v = a[index]
        except IndexError:
            raise _oob(a, index, span, name) from None
        return read(v) if read else v

    return read_n


def _index_locator(base: Fn, indices: list[Fn], span: Span | None, name: str) -> Callable:
    def locate(f: Frame) -> tuple[Any, Any]:
        a = base(f)
        index = tuple(fn(f) for fn in indices)
        if len(index) > a.ndim or any(not 0 <= i < n for i, n in zip(index, a.shape, strict=False)):
            raise _oob(a, index, span, name)
        return a, index

    return locate


def _comparison(op: str, lf: Fn, rf: Fn) -> Fn:
    if op == "<":
        return lambda f: lf(f) < rf(f)
    if op == "<=":
        return lambda f: lf(f) <= rf(f)
    if op == ">":
        return lambda f: lf(f) > rf(f)
    if op == ">=":
        return lambda f: lf(f) >= rf(f)
    if op == "==":
        return lambda f: lf(f) == rf(f)
    return lambda f: lf(f) != rf(f)


def _int_overflow(operation: str, span: Span | None) -> MclError:
    return fail(
        "int-overflow",
        f"int overflow: {operation} does not fit in 32 bits",
        span,
        hint="C leaves signed overflow undefined; use float or double, or smaller values",
    )


def _int_arith(op: str, lf: Fn, rf: Fn, span: Span | None) -> Fn:
    """C integer arithmetic on 32-bit ints. Python ints never overflow, so every result is
    range-checked: an overflow is reported, never silently carried into later results."""
    lo, hi = ops.INT_MIN, ops.INT_MAX
    if op in ("+", "-", "*"):
        fn2 = {"+": operator.add, "-": operator.sub, "*": operator.mul}[op]

        def arith(f: Frame) -> int:
            a, b = lf(f), rf(f)
            v = fn2(a, b)
            if lo <= v <= hi:
                return v
            raise _int_overflow(f"{a} {op} {b}", span)

        return arith
    fn = ops.INT_OPS[op]

    def checked(f: Frame) -> int:
        a, b = lf(f), rf(f)
        try:
            v = fn(a, b)
        except ops.IntegerDivisionByZero:
            raise fail("division-by-zero", "integer division by zero", span) from None
        except ops.ShiftOutOfRange:
            raise fail(
                "shift", f"shift count {b} is outside 0..31 in {a} {op} {b}", span
            ) from None
        except ops.IntegerOverflow:
            raise _int_overflow(f"{a} {op} {b}", span) from None
        if lo <= v <= hi:
            return v
        raise _int_overflow(f"{a} {op} {b}", span)

    return checked


def _float_arith(op: str, lf: Fn, rf: Fn) -> Fn:
    if op == "+":
        return lambda f: lf(f) + rf(f)
    if op == "-":
        return lambda f: lf(f) - rf(f)
    if op == "*":
        return lambda f: lf(f) * rf(f)
    if op == "/":
        return lambda f: lf(f) / rf(f)
    fn = ops.FLOAT_OPS[op]
    return lambda f: fn(lf(f), rf(f))
