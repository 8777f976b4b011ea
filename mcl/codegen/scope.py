"""Variables visible while emitting code, and the types of MCPL expressions.

Code generation needs a little type information the AST does not carry: whether an
expression is an int or a float (built-ins such as abs/min/max/atomicAdd differ), which
address space an array lives in (pointer qualifiers, atomics), and the shape of arrays
(linearised indexing).

The type of an expression is the checker's (docs/architecture.md, "The checker's side
tables"): `CheckerTypes` holds the side tables' types of the program code is generated
from, carried over to the node that takes an expression's place when code generation
rewrites the tree (description constants folded: `ast.transform`'s `moved` hook). Typed
here, by `_TypeOf`, are only
- an array: its C type needs the sizes, which the declaration has and the checker's
  types leave out (linearised indexing); the scalars and structs it holds are the
  checker's again;
- the nodes code generation builds itself (literals from folded constants, launch-size
  and lane-offset arithmetic), and the tree of a program given without its checker's
  tables (`generate_module` of a lone module, a split of `mcl run-multi`, the host
  harness's statements): by the language's rules, which are the checker's tables
  (`mcl.mcpl.types.arithmetic`, `mcl.mcpl.builtins`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcl.codegen.c_names import c_name
from mcl.codegen.layout import flat_dims, remaining_type
from mcl.diagnostics import MclError, Span, error
from mcl.identity import Ref
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

if TYPE_CHECKING:
    from mcl.mcpl.sidetables import SideTables

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


@dataclass(eq=False)
class CheckerTypes:
    """The checker's type of each expression of the tree code generation prints: those of
    the side tables of the program it was given, and of each node that took a typed
    node's place in a rewrite (`carry`)."""

    types: dict[Ref[Expr], T.VType] = field(default_factory=dict)

    @classmethod
    def of(cls, tables: SideTables | None) -> CheckerTypes:
        return cls(dict(tables.types) if tables is not None else {})

    def carry(self, old: object, new: object) -> None:
        """`new` stands where `old` stood (the `moved` hook of `ast.transform`)."""
        found = self.types.get(Ref(old))  # type: ignore[arg-type]  # any node; Expr found
        if found is not None:
            self.types[Ref(new)] = found  # type: ignore[arg-type]  # it replaces an Expr

    def scalar_or_struct(self, e: Expr) -> Prim | NamedType | None:
        """The checker's type of `e` when it is a primitive or a user type (None: an
        array, whose sizes the declaration has, or a node the checker did not type)."""
        found = self.types.get(Ref(e))
        if isinstance(found, T.Scalar):
            return Prim(found.name)
        if isinstance(found, T.Struct):
            return NamedType(found.name)
        return None


@dataclass
class Scope:
    """Nested lexical scopes of one generated function (a fresh object per function)."""

    types: dict[str, TypeDef]
    functions: dict[str, Function]
    frames: list[dict[str, Var]] = field(default_factory=lambda: [{}])
    checker: CheckerTypes = field(default_factory=CheckerTypes)

    def child(self) -> Scope:
        return Scope(self.types, self.functions, self.frames + [{}], self.checker)

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
        """The type of `e`: the checker's, else (an array, a node code generation built)
        `_TypeOf`'s (an expression kind without a rule raises UnknownNodeError: it is a
        StrictVisitor)."""
        checked = self.checker.scalar_or_struct(e)
        if checked is not None:
            return checked
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
    """C's usual arithmetic conversions for the MCPL primitives (the language's rule,
    `mcl.mcpl.types.arithmetic`); a bool computes as an int."""
    a_name, b_name = (t.name if isinstance(t, Prim) and t.name in T.NUMERIC_RANK else "int"
                      for t in (a, b))
    return Prim(T.arithmetic(a_name, b_name))


def decl_dims(d: Decl) -> list[Expr]:
    return flat_dims(d.type) if isinstance(d.type, ArrayType) else []


def _type_text(t: Type) -> str:
    if isinstance(t, Prim | NamedType):
        return t.name
    return f"array of {_type_text(t.element)}"
