"""Variables visible while emitting code, and the types of MCPL expressions.

Code generation needs a little type information the AST does not carry: whether an
expression is an int or a float (built-ins such as abs/min/max/atomicAdd differ), which
address space an array lives in (pointer qualifiers, atomics), and the shape of arrays
(linearised indexing).

The type of an expression is the checker's (docs/architecture.md, "The checker's side
tables"): code generation takes a `CheckedProgram` and reads its side tables, which follow
it through its own rewrites (description constants folded: `SideTables.rewrite`) and
record the nodes it builds as it builds them (`mcl.mcpl.typed.Typed`, the checker's
rules). Code generation types nothing itself; it reads from the declaration only an
array's sizes, which its C type needs (linearised indexing) and the checker's types leave
out (they keep the shape).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcl.codegen.c_names import c_name
from mcl.codegen.layout import flat_dims, remaining_type
from mcl.diagnostics import MclError, Span, error
from mcl.mcpl import types as T
from mcl.mcpl.ast import (
    ArrayType,
    CallStmt,
    Decl,
    Expr,
    Field,
    Function,
    Index,
    Name,
    NamedType,
    Prim,
    Type,
    TypeDef,
)
from mcl.mcpl.typed import Typed

if TYPE_CHECKING:
    from mcl.mcpl.sidetables import SideTables

INT = Prim("int")
FLOAT = Prim("float")
DOUBLE = Prim("double")
BOOL = Prim("bool")
VOID = Prim("void")

@dataclass(frozen=True)
class CVar:
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
class CScope:
    """Nested lexical scopes of one generated function (a fresh object per function)."""

    types: dict[str, TypeDef]
    functions: dict[str, Function]
    tables: SideTables
    frames: list[dict[str, CVar]] = field(default_factory=lambda: [{}])

    def child(self) -> CScope:
        return CScope(self.types, self.functions, self.tables, self.frames + [{}])

    @property
    def typed(self) -> Typed:
        """Builds the nodes code generation makes, typed as they are built."""
        return Typed(self.tables)

    def declare(self, var: CVar) -> CVar:
        self.frames[-1][var.name] = var
        return var

    def lookup(self, name: str, span: Span | None = None) -> CVar:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        raise MclError(error("codegen-unknown-name", f"unknown name '{name}'", span))

    def find(self, name: str) -> CVar | None:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        return None

    # ------------------------------------------------------------------ types
    def type_of(self, e: Expr) -> Type:
        """The checker's type of `e` as written: an array's with the sizes of its
        declaration. A node without a type is a node code generation built untyped, a
        mistake of code generation (`codegen-untyped`)."""
        found = self.tables.type_of(e)
        match found:
            case T.Scalar():
                return Prim(found.name)
            case T.Struct():
                return NamedType(found.name)
            case T.Array():
                return self._declared_array(e)
        raise MclError(error("codegen-untyped", "code generation has no type for "
                             f"{type(e).__name__} {e!r}", e.span))

    def _declared_array(self, e: Expr) -> Type:
        """The declared type, sizes and all, of the array the access path `e` names."""
        match e:
            case Name():
                return self.lookup(e.name, e.span).type
            case Index():
                base_t = self.type_of(e.base)
                assert isinstance(base_t, ArrayType), "the checker typed the base an array"
                rest = remaining_type(base_t, len(e.indices))
                assert rest is not None, "the checker typed the element an array"
                return rest
            case Field():
                return self.field_type(self.type_of(e.base), e.name, e.span)
        raise MclError(error("codegen-untyped", f"an array {type(e).__name__} has no "
                             "declaration to give its sizes", e.span))

    def field_type(self, t: Type, name: str, span: Span | None) -> Type:
        if isinstance(t, NamedType) and t.name in self.types:
            for f in self.types[t.name].fields:
                if f.name == name:
                    return f.type
        raise MclError(error("codegen-field", f"no field '{name}' in {_type_text(t)}", span))

    def is_float(self, e: Expr) -> bool:
        return self.type_of(e) in (FLOAT, DOUBLE)

    def root_var(self, e: Expr) -> CVar | None:
        """The variable an access expression starts from (`c` for `c[i].r`)."""
        while isinstance(e, Index | Field):
            e = e.base
        return self.find(e.name) if isinstance(e, Name) else None



def signature_only(f: Function) -> bool:
    """A library function without a real body: only `mcl_builtin_read/write` calls
    (mcpl.md section 3); code generation maps it to the OpenCL built-in of its name."""
    stmts = f.body.stmts
    return bool(stmts) and all(
        isinstance(st, CallStmt) and st.call.func in ("mcl_builtin_read", "mcl_builtin_write")
        for st in stmts
    )


def decl_dims(d: Decl) -> list[Expr]:
    return flat_dims(d.type) if isinstance(d.type, ArrayType) else []


def _type_text(t: Type) -> str:
    if isinstance(t, Prim | NamedType):
        return t.name
    return f"array of {_type_text(t.element)}"
