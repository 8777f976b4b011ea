"""Block scopes of MCPL variables (mcpl.md §5 rule 1).

A function body opens a scope for its parameters; every block, `for` statement (for its
loop variable) and `foreach` statement (for its index) opens a nested one. Inner
declarations may shadow outer ones, but a name can be declared only once per scope.
Top-level constants are looked up after all scopes (see `mcl.mcpl.check`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from typing import Generic, TypeVar

from mcl.diagnostics import Span
from mcl.mcpl import types as T


class Kind(str, Enum):
    PARAM = "parameter"
    LOCAL = "variable"
    LOOP = "loop variable"
    INDEX = "foreach index"
    VIEW = "view"
    # The declarations outside function bodies that names resolve to (the side tables,
    # mcl.mcpl.sidetables); block scopes never hold these.
    FIELD = "field"
    CONSTANT = "constant"
    FUNCTION = "function"
    BUILTIN = "built-in function"
    TYPE = "type"


@dataclass(eq=False)
class Symbol:
    """A declared variable as the checker sees it. `node` is the declaring AST node (Param,
    Decl, For, Foreach or View); `storage` names the symbol whose memory it is (itself, or
    the viewed array for a view) so aliasing through views is caught (section 4.3)."""

    name: str
    kind: Kind
    type: T.VType
    node: object
    span: Span | None
    spaces: tuple[str, ...] = ()
    const: bool = False
    host: bool = False  # declared outside all foreach statements of a kernel
    storage: Symbol | None = None
    used: bool = False
    written: bool = False
    # For a local initialised from constants and parameters: what it is computed from
    # (it may then size arrays, section 4.3); None when it could not size an array.
    deps: list[Symbol] | None = None
    # For a scalar local initialised with a constant value: that value (the checker's
    # folding, mcl.mcpl.constfold); it is the variable's value everywhere when the
    # function never writes the variable again.
    value: object = None

    @property
    def root(self) -> Symbol:
        return self.storage.root if self.storage is not None else self


S = TypeVar("S")


class ScopeStack(Generic[S]):
    """Nested name -> value maps, innermost last."""

    def __init__(self) -> None:
        self._scopes: list[dict[str, S]] = [{}]

    @contextmanager
    def nested(self) -> Iterator[dict[str, S]]:
        self._scopes.append({})
        try:
            yield self._scopes[-1]
        finally:
            self._scopes.pop()

    def declare(self, name: str, value: S) -> S | None:
        """Declare `name` in the innermost scope; returns the value it already had there."""
        previous = self._scopes[-1].get(name)
        self._scopes[-1][name] = value
        return previous

    def lookup(self, name: str) -> S | None:
        for scope in reversed(self._scopes):
            if name in scope:
                return scope[name]
        return None

    def names(self) -> set[str]:
        return {name for scope in self._scopes for name in scope}
