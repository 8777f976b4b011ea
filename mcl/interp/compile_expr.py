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

Names and types come from the checked program's side tables (`mcl.mcpl.sidetables`): a
name use is the variable of the declaration the checker bound it to (a variable's slot is
keyed by its declaring node), a constant, a function or a user type likewise; the type of
a name, a field, an element or a call is the checker's. The interpreter computes only
what decides the arithmetic it runs: C's conversions of operators and built-ins.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from mcl.diagnostics import MclError, Span, error
from mcl.identity import Ref
from mcl.interp.natives import NATIVES
from mcl.interp.program import is_library_stub
from mcl.interp.values import (
    DTYPES,
    POISON,
    StructValue,
    computes_as,
    convert,
    scalar_name,
    wider,
)
from mcl.mcpl import ast
from mcl.mcpl import operators as ops
from mcl.mcpl import types as T
from mcl.mcpl.builtins import Builtin
from mcl.mcpl.scopes import Kind
from mcl.mcpl.sidetables import Binding, Declaring, SideTables, Use
from mcl.mcpl.visitor import StrictVisitor

Frame = list
Fn = Callable[[Frame], Any]


class Callee(Protocol):
    """A compiled function as a call compiled against it uses it
    (`mcl.interp.engine.CompiledFunction`)."""

    written_params: set[str]
    param_slots: list[int]

    def invoke(self, values: list[object], span: Span | None) -> tuple[object, Frame]: ...


class Compiling(Protocol):
    """What the compilers ask of the engine that runs them (`mcl.interp.engine.Engine`):
    the checker's side tables, the function being run, user types, constants, the
    hardware descriptions and the compiled callees. The compilers name this protocol, not
    the engine's class: the engine imports them, and they import nothing of it."""

    tables: SideTables
    entry: ast.Function | None

    def type_def(self, t: ast.NamedType) -> ast.TypeDef: ...

    def constant_value(self, decl: ast.Decl) -> object: ...

    def hwd_constant(self, path: tuple[str, ...], span: Span | None) -> int | float: ...

    def hwd(self, name: str) -> Any: ...

    def compiled(self, function: ast.Function) -> Callee: ...

_NOT_CONST = object()

PRIM = {name: T.Scalar(name) for name in ("int", "float", "double", "bool", "byte", "void")}


def fail(code: str, message: str, span: Span | None, hint: str | None = None) -> MclError:
    return MclError(error(f"interp-{code}", message, span, hint))


@dataclass(frozen=True)
class CExpr:
    """A compiled expression: closure, static type, and the value when it is constant."""

    fn: Fn
    type: T.VType
    const: object = _NOT_CONST

    @property
    def is_const(self) -> bool:
        return self.const is not _NOT_CONST

    @property
    def scalar(self) -> str | None:
        return scalar_name(self.type)


def constant(value: object, t: T.VType) -> CExpr:
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
    level: int  # frame level (0 = function frame, +1 per enclosing foreach unit)
    slot: int
    type: T.VType
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


def element_reader(t: T.VType) -> Callable[[Any], Any] | None:
    """Conversion applied to a value read from a numpy array (None: use as is)."""
    name = scalar_name(t)
    if name in ("int", "byte"):
        return int
    if name == "bool":
        return bool
    return None


def caster(from_t: T.VType, to_t: T.VType, span: Span | None) -> Callable[[Any], Any] | None:
    """Conversion for storing a value of `from_t` into `to_t` (None when nothing to do)."""
    src, dst = scalar_name(from_t), scalar_name(to_t)
    if src is None or dst is None:
        if src != dst:
            raise fail("type", f"cannot convert {from_t} to {to_t}", span)
        return None
    if src == dst and dst not in ("byte",):
        return None

    def cast(v: Any) -> Any:
        try:
            return convert(v, dst)
        except (OverflowError, ValueError) as exc:
            raise fail("conversion", f"conversion to {dst}: {exc}", span) from None

    return cast


def with_cast(e: CExpr, to: T.VType, node: ast.Expr | None, span: Span | None) -> CExpr:
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
    """Variable slots and expression compilation for one function body."""

    def __init__(self, engine: Compiling, function: ast.Function):
        self.engine = engine
        self.tables = engine.tables
        self.function = function
        # The variables declared so far, by declaring node: the checker bound every name
        # use to one, so no scopes are needed to find it.
        self.vars: dict[Ref[Declaring], Var] = {}
        self.level = 0
        self.slot_counts = [1]  # per open frame level; slot 0 is the parent link

    # -- variables --------------------------------------------------------------------
    def declare(self, node: Declaring) -> Var:
        """A slot for the variable `node` declares, of the type the checker gave it."""
        slot = self.slot_counts[self.level]
        self.slot_counts[self.level] += 1
        binding = self.declared(node)
        var = Var(self.level, slot, binding.type, binding.const)
        self.vars[Ref(node)] = var
        return var

    def declared(self, node: Declaring) -> Binding:
        """The checker's binding of the declaration `node`."""
        found = self.tables.binding_declared_by(node)
        if found is None or isinstance(found.type, T.Unknown):
            raise _unchecked(node.var if isinstance(node, ast.Foreach) else node.name,
                             getattr(node, "span", None))
        return found

    def bound(self, use: Use) -> Binding:
        """The declaration the checker bound the name in `use` to."""
        found = self.tables.binding_of(use)
        if found is None:
            raise _unchecked(_use_name(use), use.span)
        return found

    def var(self, use: ast.Name | ast.ViewDecl) -> Var | None:
        """The variable `use` names (None: it names a top-level constant)."""
        return self.vars.get(Ref(self.bound(use).node))

    def type_of(self, e: ast.Expr) -> T.VType:
        """The checker's type of `e`."""
        found = self.tables.type_of(e)
        if found is None or isinstance(found, T.Unknown):
            raise fail("type", "the checker could not type this expression", e.span,
                       hint="`mcl check` says why")
        return found

    def loader(self, var: Var) -> Fn:
        return frame_loader(self.level - var.level, var.slot)

    # -- types ------------------------------------------------------------------------
    def shape_fn(self, t: ast.ArrayType) -> Fn:
        """Closure computing the concatenated numpy shape of an array type's sizes."""
        sizes = [with_cast(self.expr(e), PRIM["int"], e, e.span) for group in t.dims for e in group]
        if all(s.is_const for s in sizes):
            # `is_const` says `const` holds the size; its type is Optional
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
            return self._struct_allocator(t, self.engine.type_def(t))
        return None

    def _struct_allocator(self, t: ast.NamedType, tdef: ast.TypeDef) -> Fn:
        # Type parameters (`type Tile(int n)`) are bound in a frame of their own, so field
        # sizes such as `float[n] data` can use them.
        saved = (self.level, self.slot_counts)
        self.level, self.slot_counts = 0, [1]
        try:
            params = [self.declare(p) for p in tdef.params]
            fields = []
            for decl in tdef.fields:
                make = self.allocator(decl.type, decl.span)
                poison = POISON.get(scalar_name(decl.type) or "", None)
                fields.append((decl.name, make, poison))
            nslots = self.slot_counts[0]
        finally:
            self.level, self.slot_counts = saved
        args = [
            with_cast(self.expr(a), p.type, a, a.span).fn
            for a, p in zip(t.args, params, strict=True)
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
        binding = self.bound(e)
        if binding.kind is Kind.CONSTANT:
            assert isinstance(binding.node, ast.Decl)
            return constant(self.engine.constant_value(binding.node), binding.type)
        var = self.vars.get(Ref(binding.node))
        if var is None:  # bound to a declaration this function has not made (yet)
            raise _unchecked(e.name, e.span)
        return CExpr(self.loader(var), binding.type)

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
        fn, name = self.expr(e.base).fn, e.name
        return CExpr(lambda f: fn(f).fields[name], self.type_of(e))

    def visit_Index(self, e: ast.Index) -> CExpr:
        base, indices, t, names = self._index_chain(e)
        read = element_reader(t) if not isinstance(t, ast.ArrayType) else None
        return CExpr(_index_reader(base.fn, indices, read, e.span, names), t)

    def _index_chain(self, e: ast.Index) -> tuple[CExpr, list[Fn], T.VType, str]:
        """Collapse `d2[ti, tj][ei, ej]` into one numpy index (ti, tj, ei, ej) on `d2`."""
        chain: list[ast.Index] = []
        node: ast.Expr = e
        while isinstance(node, ast.Index):
            chain.append(node)
            node = node.base
        chain.reverse()
        base = self.expr(node)
        indices = [self.expr(index).fn for step in chain for index in step.indices]
        return base, indices, self.type_of(e), ast.root_name(e) or "array"

    def visit_Unary(self, e: ast.Unary) -> CExpr:
        operand = self.expr(e.operand)
        fn = operand.fn
        if e.op == "!":
            result: CExpr = CExpr(lambda f: not fn(f), PRIM["bool"])
        elif e.op == "-":
            kind = operand.scalar
            if kind not in ("int", "byte", "float", "double", "bool"):
                raise fail("type", "unary '-' needs a number", e.span)
            t = PRIM[computes_as(kind)]
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
        target = self.bound(e).node
        if isinstance(target, ast.Function) and not is_library_stub(target):
            return self._mcpl_call(e, target)
        if e.func in NATIVES:
            return self._native_call(e, target)
        raise fail(
            "unsupported",
            f"library function '{e.func}' has no implementation in the interpreter",
            e.span,
            hint="its body only states an access signature (mcl_builtin_read/write)",
        )

    def _native_call(self, e: ast.Call, target: Declaring) -> CExpr:
        native = NATIVES[e.func]
        args = [self.expr(a) for a in e.args]
        declared = target if isinstance(target, ast.Function) else None
        if declared is not None:
            writes = _declared_writes(declared)
        elif isinstance(target, Builtin):
            writes = {i for i, mode in enumerate(target.modes) if "w" in mode}
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
            refs[i] = (ref, caster(PRIM[kinds[i]], t, e.span))

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
        fns: list[Fn] = []
        copy_back: list[tuple[int, Fn, Callable | None]] = []
        written = callee.written_params
        for i, (arg, param) in enumerate(zip(e.args, target.params, strict=True)):
            ca = self.expr(arg)
            ptype = self.declared(param).type
            if scalar_name(ptype) is not None:
                fns.append(with_cast(ca, ptype, arg, arg.span).fn)
                # Scalars are passed by reference unless constant (paper section 4.3);
                # copy-in/copy-out is equivalent because MCPL forbids aliasing.
                if param.name in written and not param.const and _is_lvalue(arg):
                    ref, t = self.lvalue(arg)
                    copy_back.append((i, ref, caster(ptype, t, arg.span)))
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

        return CExpr(call, self.type_of(e))

    # -- lvalues ----------------------------------------------------------------------
    def lvalue(self, e: ast.Expr) -> tuple[Callable[[Frame], tuple[Any, Any]], T.VType]:
        """Closure locating an assignable place as (container, key), so that
        `container[key]` reads it and `container[key] = v` writes it, and its type."""
        root: ast.Expr = e
        while isinstance(root, (ast.Index, ast.Field)):
            root = root.base
        if isinstance(root, ast.Name) and ((var := self.var(root)) is None or var.const):
            raise fail("const", f"cannot assign to constant '{root.name}'", e.span)
        if isinstance(e, ast.Name):
            var = self.var(e)
            assert var is not None
            getter, slot = frame_getter(self.level - var.level), var.slot
            return (lambda f: (getter(f), slot)), var.type
        if isinstance(e, ast.Index):
            base, indices, t, name = self._index_chain(e)
            return _index_locator(base.fn, indices, e.span, name), t
        if not isinstance(e, ast.Field):
            raise fail("type", "this expression cannot be assigned to", e.span)
        fn, fname = self.expr(e.base).fn, e.name
        return (lambda f: (fn(f).fields, fname)), self.type_of(e)


def _unchecked(name: str, span: Span | None) -> MclError:
    # A program that did not check clean runs as far as the checker resolved it.
    return fail("unknown-name", f"the checker resolved no declaration of '{name}'", span,
                hint="`mcl check` says why")


def _use_name(use: Use) -> str:
    if isinstance(use, ast.Call):
        return use.func
    if isinstance(use, ast.ViewDecl):
        return use.source
    return use.name


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
