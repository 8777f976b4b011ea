"""Find references and rename, across the modules of the program (imports included).

A name under the cursor stands for one definition: a variable (mcpl.md §5 rule 1: the
innermost declaration in scope), a top-level constant, a function or a user type, the
last three as the program resolves them from each module (mcl.mcpl.loader: own
definitions, then the imported modules' exports). A reference is every place whose name
resolves to that same definition, so a local that shadows a constant is not one of the
constant's references."""

from __future__ import annotations

import re
from collections.abc import Iterator
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
from mcl.source_files import SourcePositions

if TYPE_CHECKING:
    from mcl.mcpl.loader import Program

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class Target:
    name: str
    kind: str  # variable, constant, function, type
    node: Any  # the declaring node


def target_at(program: Program, path: Path, word: str | None, line: int, character: int
              ) -> tuple[Target, ast.Module] | None:
    """The definition the name under the 0-based position stands for."""
    module = lookup.module_at(program, path)
    if module is None or word is None:
        return None
    found = lookup.find(module, line, character)
    node = found.innermost
    if isinstance(node, ast.Name) and node.name == word:
        declared = lookup.declaration_of(found, word, line, character)
        if declared is not None:
            kind = "constant" if declared.kind == "constant" else "variable"
            return Target(word, kind, declared.node), module
        constant = program.lookup_constant(word, module)
        return (Target(word, "constant", constant), module) \
            if isinstance(constant, ast.Decl) else None
    if isinstance(node, ast.Call) and node.func == word or \
            isinstance(node, ast.Function) and node.name == word:
        function = program.lookup_function(word, module)
        return (Target(word, "function", function), module) \
            if isinstance(function, ast.Function) else None
    if isinstance(node, ast.NamedType | ast.TypeDef) and node.name == word:
        typedef = program.lookup_type(word, module)
        return (Target(word, "type", typedef), module) \
            if isinstance(typedef, ast.TypeDef) else None
    declaring = found.innermost_of(ast.Decl, ast.Param, ast.Foreach, ast.View)
    if declaring is not None and _declared_name(declaring) == word:
        top = found.function is None and isinstance(declaring, ast.Decl)
        return Target(word, "constant" if top else "variable", declaring), module
    return None


def _declared_name(node: Any) -> str | None:
    return node.var if isinstance(node, ast.Foreach) else getattr(node, "name", None)


def references(program: Program, target: Target, module: ast.Module) -> list[Span]:
    """Where `target` is named: its declaration first, then every use."""
    spans: list[Span | None] = [lookup.name_span(target.node, target.name)]
    modules = [module] if target.kind == "variable" else list(program.modules.values())
    for m in modules:
        spans += _uses_in(program, m, target)
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


def _uses_in(program: Program, module: ast.Module, target: Target) -> Iterator[Span | None]:
    name = target.name
    tops: list[tuple[ast.Function | None, Any]] = [(f, f) for f in module.functions]
    tops += [(None, c) for c in module.constants] + [(None, t) for t in module.types]
    for function, top in tops:
        for node in ast.walk(top):
            if isinstance(node, ast.Name) and node.name == name and node.span is not None:
                if _resolves(program, module, function, node.span, target):
                    yield node.span
            elif isinstance(node, ast.Call) and node.func == name and \
                    target.kind == "function" and node.span is not None:
                if program.lookup_function(name, module) is target.node:
                    yield head(node.span, len(name))
            elif isinstance(node, ast.NamedType) and node.name == name and \
                    target.kind == "type" and node.span is not None:
                if program.lookup_type(name, module) is target.node:
                    yield head(node.span, len(name))


_EXPORT = re.compile(r"(?<![A-Za-z0-9_])export\s[^;]*;")


def _exported_at(file: str, name: str) -> Iterator[Span]:
    """The name on the export lines of the module in `file` (the AST keeps the exported
    names without their places)."""
    positions = SourcePositions("\n".join(SourceText(file).lines()), file)
    word = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])")
    for export in _EXPORT.finditer(positions.text):
        for m in word.finditer(positions.text, export.start(), export.end()):
            yield positions.span(m.start(), m.end())


def _resolves(program: Program, module: ast.Module, function: ast.Function | None, span: Span,
              target: Target) -> bool:
    found = lookup.Found(module, function)
    declared = lookup.declaration_of(found, target.name, span.line - 1, span.column - 1)
    if declared is not None:
        return declared.node is target.node
    return target.kind == "constant" and \
        program.lookup_constant(target.name, module) is target.node


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
