"""What stands at a position of a kernel: the nodes around it, and the variables
declared there with the extent of their scopes (mcpl.md §5 rule 1), for completion: the
names visible at a cursor that no name stands at yet. What a written name refers to is
the checker's answer, its side tables (`CheckResult.tables`, mcl.mcpl.sidetables)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.lsp.convert import contains, same_file
from mcl.mcpl import ast
from mcl.mcpl.positions import SourceText
from mcl.mcpl.visitor import unknown_node

if TYPE_CHECKING:
    from mcl.mcpl.loader import Program


@dataclass
class Found:
    """The nodes that contain the position, outermost first, in one function (or at the
    top level of the module when `function` is None)."""

    module: ast.Module
    function: ast.Function | None
    chain: list[Any] = field(default_factory=list)

    @property
    def innermost(self) -> Any:
        return self.chain[-1] if self.chain else None

    def innermost_of(self, *kinds: type) -> Any:
        return next((n for n in reversed(self.chain) if isinstance(n, kinds)), None)


def module_at(program: Program | None, path: Path) -> ast.Module | None:
    """The module of `program` that came from `path` (the main one, normally)."""
    if program is None:
        return None
    for name, module in program.modules.items():
        file = program.files.get(name)
        if file is not None and Path(file).resolve() == path.resolve():
            return module
    return program.main


def find(module: ast.Module, line: int, character: int) -> Found:
    """The chain of nodes of `module` around the 0-based position."""
    top: list[Any] = [*module.imports, *module.constants, *module.types, *module.functions]
    for node in top:
        if contains(node.span, line, character):
            found = Found(module, node if isinstance(node, ast.Function) else None)
            _descend(node, line, character, found.chain)
            return found
    return Found(module, None)


def _descend(node: Any, line: int, character: int, chain: list[Any]) -> None:
    while True:
        chain.append(node)
        inner = [c for c in ast.children(node)
                 if contains(getattr(c, "span", None), line, character)]
        if not inner:
            return
        node = inner[-1]  # the last match: `a[i]` inside `a[i] = b` is nested, not beside


# ------------------------------------------------------------------------ declarations


@dataclass(frozen=True)
class Declaration:
    """A variable as declared: its node (Param, Decl, For, Foreach or View) and where
    its name stands."""

    name: str
    node: Any
    kind: str  # parameter, variable, loop variable, foreach index, constant
    start: tuple[int, int]  # (line, column) from which the name is visible
    end: tuple[int, int]  # to the end of its scope


def declarations(function: ast.Function) -> Iterator[Declaration]:
    """Every variable `function` declares, with the extent of its scope."""
    whole = _bounds(function.span)
    for p in function.params:
        yield Declaration(p.name, p, "parameter", whole[0], whole[1])
    yield from _in_stmt(function.body, _bounds(function.body.span))


def _bounds(span: Any) -> tuple[tuple[int, int], tuple[int, int]]:
    if span is None:
        return (0, 0), (0, 0)
    return (span.line, span.column), (span.end_line, span.end_column)


def _in_stmt(stmt: ast.Stmt, scope: tuple[tuple[int, int], tuple[int, int]]
             ) -> Iterator[Declaration]:
    match stmt:
        case ast.Block():
            inner = _bounds(stmt.span)
            for s in stmt.stmts:
                yield from _in_stmt(s, inner)
        case ast.Decl():
            start = _bounds(stmt.span)[0]
            yield Declaration(stmt.name, stmt, "variable", start, scope[1])
            if stmt.view is not None:
                yield Declaration(stmt.view.name, stmt.view, "view", start, scope[1])
        case ast.ViewDecl():
            yield Declaration(stmt.view.name, stmt.view, "view", _bounds(stmt.span)[0],
                              scope[1])
        case ast.For():
            own = _bounds(stmt.span)
            if isinstance(stmt.init, ast.Decl):
                yield Declaration(stmt.init.name, stmt.init, "loop variable", *own)
            yield from _in_stmt(stmt.body, own)
        case ast.Foreach():
            own = _bounds(stmt.span)
            yield Declaration(stmt.var, stmt, "foreach index", *own)
            yield from _in_stmt(stmt.body, own)
        case ast.If():
            yield from _in_stmt(stmt.then, _bounds(stmt.then.span))
            if stmt.orelse is not None:
                yield from _in_stmt(stmt.orelse, _bounds(stmt.orelse.span))
        case (ast.Assign() | ast.IncDec() | ast.CallStmt() | ast.Swap() | ast.Barrier()
              | ast.Return()):
            pass  # declares nothing
        case _:
            unknown_node(stmt, "the language server's declarations")


def names(use: ast.Name | ast.Call | ast.NamedType) -> str:
    """The name a use of a declaration writes."""
    return use.func if isinstance(use, ast.Call) else use.name


def name_span(node: Any, name: str) -> Any:
    """Where `name` stands inside a declaring node (the node's span if not found)."""
    span = getattr(node, "span", None)
    if span is None:
        return None
    return SourceText(span.file).word(name, span)


def in_file(span: Any, path: Path) -> bool:
    return same_file(span, path)
