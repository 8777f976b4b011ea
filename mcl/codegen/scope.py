"""Variables visible while emitting code, and the types of MCPL expressions.

Code generation needs a little type information the AST does not carry: whether an
expression is an int or a float (built-ins such as abs/min/max/atomicAdd differ), which
address space an array lives in (pointer qualifiers, atomics), and the shape of arrays
(linearised indexing).

It does not read the checker's side tables (docs/architecture.md, "The checker's side
tables"): code generation works on a tree it rewrote (description constants folded,
`-D`/tuned constants substituted, loops unrolled, lanes), whose new nodes the tables do
not hold, and an array's C type needs its sizes, which the checker's types leave out; a
second check of the rewritten module would still leave the sizes to this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcl.codegen.c_names import c_name
from mcl.codegen.layout import flat_dims, remaining_type
from mcl.diagnostics import MclError, Span, error
from mcl.mcpl import types as T
from mcl.mcpl.ast import (
    ArrayType,
    Binary,
    BoolLit,
    Call,
    CallStmt,
    Decl,
    Expr,
    Field,
    FloatLit,
    Function,
    HwdConst,
    Index,
    IntLit,
    Name,
    NamedType,
    Prim,
    Type,
    TypeDef,
    Unary,
)
from mcl.mcpl.builtins import BUILTINS
from mcl.mcpl.visitor import StrictVisitor

INT = Prim("int")
FLOAT = Prim("float")
DOUBLE = Prim("double")
BOOL = Prim("bool")
VOID = Prim("void")

@dataclass(frozen=True)
class Var:
    """A variable of the generated code. `address_space` is the OpenCL one ('global',
    'local', 'constant', 'private'); `by_pointer` marks a scalar or struct parameter of a
    helper function that is passed by reference (it is written); `readonly` a kernel
    parameter the kernel never writes, declared const, so a view of it points to const."""

    name: str
    type: Type
    address_space: str = "private"
    space: str | None = None
    by_pointer: bool = False
    kind: str = "local"  # param | local | index | host | constant
    readonly: bool = False  # a kernel parameter declared const (never written)

    @property
    def cname(self) -> str:
        return c_name(self.name)

    @property
    def is_array(self) -> bool:
        return isinstance(self.type, ArrayType)


@dataclass
class Scope:
    """Nested lexical scopes of one generated function (a fresh object per function)."""

    types: dict[str, TypeDef]
    functions: dict[str, Function]
    frames: list[dict[str, Var]] = field(default_factory=lambda: [{}])

    def child(self) -> Scope:
        return Scope(self.types, self.functions, self.frames + [{}])

    def declare(self, var: Var) -> Var:
        self.frames[-1][var.name] = var
        return var

    def lookup(self, name: str, span: Span | None = None) -> Var:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        raise MclError(error("codegen-unknown-name", f"unknown name '{name}'", span))

    def find(self, name: str) -> Var | None:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        return None

    # ------------------------------------------------------------------ types
    def type_of(self, e: Expr) -> Type:
        """The type of `e` in this scope (an expression kind without a rule raises
        UnknownNodeError: `_TypeOf` is a StrictVisitor)."""
        result: Type = _TYPE_OF.visit(e, self)
        return result

    def call_type(self, e: Call) -> Type:
        f = self.functions.get(e.func)
        builtin = BUILTINS.get(e.func)
        if f is not None and (builtin is None or not signature_only(f)):
            return f.ret
        if builtin is None:
            raise MclError(
                error("codegen-unknown-function", f"unknown function '{e.func}'", e.span)
            )
        # The checker's typing of the built-in (mcl.mcpl.builtins), one table for both.
        result = builtin.result([T.from_ast(self.type_of(a)) for a in e.args])
        if isinstance(result, T.Scalar):
            return Prim(result.name)
        if isinstance(result, T.Struct):
            return NamedType(result.name)
        raise MclError(
            error("codegen-builtin-type", f"cannot type {e.func}(...) in code generation", e.span)
        )

    def field_type(self, t: Type, name: str, span: Span | None) -> Type:
        if isinstance(t, NamedType) and t.name in self.types:
            for f in self.types[t.name].fields:
                if f.name == name:
                    return f.type
        raise MclError(error("codegen-field", f"no field '{name}' in {_type_text(t)}", span))

    def is_float(self, e: Expr) -> bool:
        return self.type_of(e) in (FLOAT, DOUBLE)

    def root_var(self, e: Expr) -> Var | None:
        """The variable an access expression starts from (`c` for `c[i].r`)."""
        while isinstance(e, Index | Field):
            e = e.base
        return self.find(e.name) if isinstance(e, Name) else None



class _TypeOf(StrictVisitor):
    """The type of an expression in a `Scope` (C's usual conversions for arithmetic)."""

    def visit_IntLit(self, e: IntLit, scope: Scope) -> Type:
        return INT

    def visit_HwdConst(self, e: HwdConst, scope: Scope) -> Type:
        return INT

    def visit_FloatLit(self, e: FloatLit, scope: Scope) -> Type:
        return FLOAT

    def visit_BoolLit(self, e: BoolLit, scope: Scope) -> Type:
        return BOOL

    def visit_Name(self, e: Name, scope: Scope) -> Type:
        return scope.lookup(e.name, e.span).type

    def visit_Index(self, e: Index, scope: Scope) -> Type:
        base_t = scope.type_of(e.base)
        if not isinstance(base_t, ArrayType):
            raise MclError(error("codegen-index", "indexing a value that is not an array", e.span))
        rest = remaining_type(base_t, len(e.indices))
        return rest if rest is not None else base_t.element

    def visit_Field(self, e: Field, scope: Scope) -> Type:
        return scope.field_type(scope.type_of(e.base), e.name, e.span)

    def visit_Unary(self, e: Unary, scope: Scope) -> Type:
        return BOOL if e.op == "!" else scope.type_of(e.operand)

    def visit_Binary(self, e: Binary, scope: Scope) -> Type:
        if e.op in ("||", "&&", "==", "!=", "<", "<=", ">", ">="):
            return BOOL
        return promote(scope.type_of(e.left), scope.type_of(e.right))

    def visit_Call(self, e: Call, scope: Scope) -> Type:
        return scope.call_type(e)


_TYPE_OF = _TypeOf()

def signature_only(f: Function) -> bool:
    """A library function without a real body: only `mcl_builtin_read/write` calls
    (mcpl.md section 3); code generation maps it to the OpenCL built-in of its name."""
    stmts = f.body.stmts
    return bool(stmts) and all(
        isinstance(st, CallStmt) and st.call.func in ("mcl_builtin_read", "mcl_builtin_write")
        for st in stmts
    )


def promote(a: Type, b: Type) -> Type:
    """C's usual arithmetic conversions for the MCPL primitives."""
    for wide in (DOUBLE, FLOAT):
        if a == wide or b == wide:
            return wide
    return a if isinstance(a, Prim) and a.name != "bool" else INT


def decl_dims(d: Decl) -> list[Expr]:
    return flat_dims(d.type) if isinstance(d.type, ArrayType) else []


def _type_text(t: Type) -> str:
    if isinstance(t, Prim | NamedType):
        return t.name
    return f"array of {_type_text(t.element)}"
