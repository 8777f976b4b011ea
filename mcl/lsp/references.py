"""Find references and rename, across the modules of the program (imports included).

A name under the cursor stands for one definition: a variable (mcpl.md §5 rule 1: the
innermost declaration in scope), a top-level constant, a function or a user type, the
last three as the program resolves them from each module (mcl.mcpl.loader: own
definitions, then the imported modules' exports). The checker has resolved every name
already: its side tables (mcl.mcpl.sidetables) give the binding of the name under the
cursor, and the references are the uses bound to that same binding, so a local that
shadows a constant is not one of the constant's references."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from mcl.diagnostics import Span
from mcl.lsp import lookup
from mcl.lsp.convert import to_range
from mcl.mcpl import ast
from mcl.mcpl.parse import KEYWORDS
from mcl.mcpl.positions import SourceText, head
from mcl.mcpl.scopes import Kind
from mcl.mcpl.sidetables import Binding, SideTables, Use
from mcl.mcpl.visitor import unknown_node
from mcl.source_files import SourcePositions

if TYPE_CHECKING:
    from mcl.mcpl.loader import Program

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class Target:
    name: str
    kind: str  # variable, constant, function, type
    binding: Binding  # the checker's: its node is the declaring node

    @property
    def node(self) -> Any:
        return self.binding.node


_TARGET_KINDS = {Kind.CONSTANT: "constant", Kind.FUNCTION: "function", Kind.TYPE: "type",
                 Kind.PARAM: "variable", Kind.LOCAL: "variable", Kind.LOOP: "variable",
                 Kind.INDEX: "variable", Kind.VIEW: "variable"}


def target_at(program: Program, tables: SideTables, path: Path, word: str | None, line: int,
              character: int) -> tuple[Target, ast.Module] | None:
    """The definition the name under the 0-based position stands for, as the checker
    resolved it (`tables`): a use, or the declaration itself."""
    module = lookup.module_at(program, path)
    if module is None or word is None:
        return None
    found = lookup.find(module, line, character)
    bound = _binding_at(found.innermost, word, found, tables)
    kind = _TARGET_KINDS.get(bound.kind) if bound is not None else None
    if bound is None or kind is None:  # nothing, a built-in or a field
        return None
    return Target(word, kind, bound), module


def _binding_at(node: ast.Node | None, word: str, found: lookup.Found, tables: SideTables
                ) -> Binding | None:
    """The binding `word` stands for at `node`, the innermost node around the cursor: a
    use's, a function's or type's own, else that of the declaration around the cursor."""
    match node:
        case ast.Name() | ast.Call() | ast.NamedType() if lookup.names(node) == word:
            return tables.binding_of(node)
        case ast.Function() | ast.TypeDef() if node.name == word:
            return tables.binding_declared_by(node)
        case (None | ast.Name() | ast.Call() | ast.NamedType() | ast.Function() | ast.TypeDef()
              | ast.Prim() | ast.ArrayType() | ast.IntLit() | ast.FloatLit() | ast.BoolLit()
              | ast.HwdConst() | ast.Index() | ast.Field() | ast.Unary() | ast.Binary()
              | ast.Decl() | ast.ViewDecl() | ast.Assign() | ast.IncDec() | ast.CallStmt()
              | ast.Swap() | ast.If() | ast.For() | ast.Foreach() | ast.Barrier() | ast.Return()
              | ast.Block() | ast.Launch() | ast.Param() | ast.Import() | ast.Module()
              | ast.View()):
            declaring = found.innermost_of(ast.Decl, ast.Param, ast.Foreach, ast.View)
            if declaring is not None and _declared_name(declaring) == word:
                return tables.binding_declared_by(declaring)
            return None
        case _:
            unknown_node(node, "the language server's references")


def _declared_name(node: Any) -> str | None:
    return node.var if isinstance(node, ast.Foreach) else getattr(node, "name", None)


def references(tables: SideTables, target: Target, others: Iterable[SideTables] = ()
               ) -> list[Span]:
    """Where `target` is named: its declaration first, then every use the checker bound
    to it (in every module of the program, and in the programs checked with `others`
    that contain its declaration: the files importing its module), in the order of the
    files."""
    spans: list[Span | None] = [lookup.name_span(target.node, target.name)]
    bound = [(tables, target.binding)]
    bound += [(t, b) for t in others if (b := same_binding(t, target)) is not None]
    uses: list[Span] = [s for t, b in bound for s in map(name_span_of_use, t.uses_of(b))
                        if s is not None]
    uses.sort(key=lambda s: (s.file, s.line, s.column))
    spans += uses
    if target.kind != "variable" and spans[0] is not None:
        spans += _exported_at(spans[0].file, target.name)
    seen: set[tuple[str, int, int]] = set()
    out = []
    for s in spans:
        if s is None:
            continue
        key = (str(Path(s.file).resolve()), s.line, s.column)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def same_binding(tables: SideTables, target: Target) -> Binding | None:
    """The binding of `target`'s declaration in another program's tables (the one
    declared at the same place of the same file), or None when that program does not
    contain it."""
    span = getattr(target.node, "span", None)
    if span is None:
        return None
    file = Path(span.file).resolve()
    for binding in tables.declared.values():
        other = getattr(binding.node, "span", None)
        if binding.name == target.name and other is not None \
                and (other.line, other.column) == (span.line, span.column) \
                and Path(other.file).resolve() == file:
            return binding
    return None


def name_span_of_use(use: Use) -> Span | None:
    """Where the name stands in a node that names a declaration."""
    match use:
        case ast.Name():
            return use.span
        case ast.Call():
            return head(use.span, len(use.func)) if use.span is not None else None
        case ast.NamedType():
            return head(use.span, len(use.name)) if use.span is not None else None
        case ast.ViewDecl():
            return lookup.name_span(use, use.source)  # `a as float[n][2] pairs;`
        case ast.Field():
            return SourceText(use.span.file).word(use.name, use.span, start=use.base.span) \
                if use.span is not None else None
        case _:
            unknown_node(use, "the language server's references")


_EXPORT = re.compile(r"(?<![A-Za-z0-9_])export\s[^;]*;")


def _exported_at(file: str, name: str) -> Iterator[Span]:
    """The name on the export lines of the module in `file` (the AST keeps the exported
    names without their places)."""
    positions = SourcePositions("\n".join(SourceText(file).lines()), file)
    word = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])")
    for export in _EXPORT.finditer(positions.text):
        for m in word.finditer(positions.text, export.start(), export.end()):
            yield positions.span(m.start(), m.end())


def locations(spans: list[Span]) -> list[lsp.Location]:
    return [lsp.Location(Path(s.file).resolve().as_uri(), to_range(s)) for s in spans]


def rename_problem(new_name: str) -> str | None:
    """Why `new_name` cannot be a name, or None."""
    if not _NAME.match(new_name):
        return f"'{new_name}' is not a name (letters, digits and _, not starting with a digit)"
    if new_name in KEYWORDS:
        return f"'{new_name}' is a keyword of MCPL"
    return None


def rename_edit(spans: list[Span], new_name: str) -> lsp.WorkspaceEdit:
    changes: dict[str, list[lsp.TextEdit]] = {}
    for s in spans:
        changes.setdefault(Path(s.file).resolve().as_uri(), []).append(
            lsp.TextEdit(to_range(s), new_name))
    return lsp.WorkspaceEdit(changes=changes)
