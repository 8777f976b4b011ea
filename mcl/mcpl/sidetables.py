"""The checker's side tables: the type of every expression it typed and the declaration
every name it resolved stands for (mcpl.md §5 rules 1 and 2), keyed by the node's
identity.

    types      expression -> T.VType            every `Expr` the checker typed
    bindings   use -> Binding                   a `Name` (variable or constant), a `Call`
                                                (function or built-in), a `Field` (struct
                                                field), a `NamedType` (user type), a
                                                `ViewDecl` (the array it views)
    declared   declaring node -> Binding        Param, Decl, Foreach (its index), View,
                                                Function, TypeDef (one `Binding` each)

AST nodes compare by value, so two `a[i]` in different loops are equal; the tables key
on `mcl.identity.Ref` (the object, not its value), so each place has its own entry. The
tables belong to one checked program: after translation the pipeline checks the
translated program again (`mcl.pipeline.translate`), and the later stages read that
program's tables. A pass that rewrites a checked tree after the check carries them to
the tree it makes (`rewrite`; a node it builds is typed as it is built,
`mcl.mcpl.typed.Typed`): docs/architecture.md, "The checker's side tables". A subtree
that the translator shares between two places is one object, so it has one entry: the
one of the place checked last.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar, Union

from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl import types as T
from mcl.mcpl.builtins import Builtin
from mcl.mcpl.scopes import Kind

N = TypeVar("N")

# What a name can stand for: a variable's declaring node, a top-level constant (a Decl),
# a function, a built-in function, a user type.
Declaring = Union[ast.Param, ast.Decl, ast.Foreach, ast.View, ast.Function, ast.TypeDef,
                  Builtin]
# The nodes that name a declaration.
Use = Union[ast.Name, ast.Call, ast.Field, ast.NamedType, ast.ViewDecl]


@dataclass(frozen=True, eq=False)
class Binding:
    """One declaration, as the checker resolved it: its name, kind, declaring node and
    type (a function's: its return type; a built-in's: unknown, it depends on the
    arguments). One object per declaration, so bindings compare by identity."""

    name: str
    kind: Kind
    node: Declaring
    type: T.VType
    spaces: tuple[str, ...] = ()
    const: bool = False


@dataclass
class SideTables:
    """The side tables of one checked program (filled by the checker, read afterwards)."""

    types: dict[Ref[ast.Expr], T.VType] = field(default_factory=dict)
    bindings: dict[Ref[Use], Binding] = field(default_factory=dict)
    declared: dict[Ref[Declaring], Binding] = field(default_factory=dict)

    # -- reading -----------------------------------------------------------------------
    def type_of(self, e: ast.Expr) -> T.VType | None:
        """The checker's type of the expression `e` (None: the checker did not type it)."""
        return self.types.get(Ref(e))

    def binding_of(self, use: Use) -> Binding | None:
        """The declaration the name in `use` stands for (None: it resolved to nothing)."""
        return self.bindings.get(Ref(use))

    def binding_declared_by(self, node: Declaring) -> Binding | None:
        """The binding `node` declares (None: the checker did not see it declared)."""
        return self.declared.get(Ref(node))

    def uses_of(self, binding: Binding) -> Iterator[Use]:
        """Every node that names `binding`, in the order the checker met them."""
        for ref, bound in self.bindings.items():
            if bound is binding:
                yield ref.obj

    # -- filling (the checker) ---------------------------------------------------------
    def declare(self, node: Declaring, name: str, kind: Kind, type_: T.VType,
                spaces: tuple[str, ...] = (), const: bool = False) -> Binding:
        """The binding of `node`, made the first time it is asked for."""
        key: Ref[Declaring] = Ref(node)
        found = self.declared.get(key)
        if found is None:
            found = self.declared[key] = Binding(name, kind, node, type_, spaces, const)
        return found

    def bind(self, use: Use, binding: Binding) -> None:
        self.bindings[Ref(use)] = binding

    def record_type(self, e: ast.Expr, type_: T.VType) -> None:
        self.types[Ref(e)] = type_

    # -- a rewrite (a pass after the checker) -------------------------------------------
    def copy(self) -> SideTables:
        """Tables a pass extends with the nodes it builds, leaving these as they are."""
        return SideTables(dict(self.types), dict(self.bindings), dict(self.declared))

    def rewrite(self, tree: N, fn: Callable[[object], object | None]) -> N:
        """`ast.transform(tree, fn)`, these tables following it: a node of the result that
        stands in another's place (rebuilt around a changed child, or `fn`'s replacement)
        gets that node's entries, unless it has its own (a node `fn` built typed, with
        `mcl.mcpl.typed.Typed`). The tables follow bottom-up, so `fn` sees the rebuilt
        node's children with their entries. A binding keeps the declaring node the checker
        saw."""
        return ast.transform(tree, fn, self._follow)

    def _follow(self, old: object, new: object) -> None:
        was, now = Ref(old), Ref(new)
        type_ = self.types.get(was)  # type: ignore[arg-type]  # any node: an Expr or not
        if type_ is not None:
            self.types.setdefault(now, type_)  # type: ignore[arg-type]  # where an Expr stood
        binding = self.bindings.get(was)  # type: ignore[arg-type]  # likewise
        if binding is not None:
            self.bindings.setdefault(now, binding)  # type: ignore[arg-type]  # a use's place
        declared = self.declared.get(was)  # type: ignore[arg-type]  # likewise
        if declared is not None:
            self.declared.setdefault(now, declared)  # type: ignore[arg-type]  # a declaration's
