"""Code actions where a message has a mechanical remedy:

- `mcpl-missing-barrier`: insert `barrier(S);` before the statement of the second access,
  S being the memory space of the shared array (docs/checker.md, "A missing barrier");
- a feedback message whose figures need values (`needs`): add them to the project's
  `mcl.toml` (`values = { n = 1024 }`, what `-D n=1024` says on the command line; the
  value is a placeholder to edit), creating the file where there is none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from mcl.lsp import lookup
from mcl.lsp.config import Effective
from mcl.lsp.convert import contains
from mcl.mcpl import ast

if TYPE_CHECKING:
    from mcl.lsp.analysis import CheckResult

PLACEHOLDER = 1024
# The words of mcl.mcpl.barriers' warning: the array, and where the first access stands.
_SHARED_ARRAY = re.compile(r"shared array '([A-Za-z_][A-Za-z0-9_]*)'")
_FIRST_ACCESS = re.compile(r"at line (\d+), column (\d+)")


def code_actions(uri: str, path: Path, text: str, good: CheckResult | None,
                 diagnostics: Sequence[lsp.Diagnostic],
                 settings: Effective) -> list[lsp.CodeAction]:
    """The quick fixes for `diagnostics`; `good` is the document's last check that
    parsed."""
    out = []
    for d in diagnostics:
        if d.code == "mcpl-missing-barrier" and good is not None:
            action = insert_barrier(uri, path, text, good, d)
            if action is not None:
                out.append(action)
    needs = sorted({n for d in diagnostics if isinstance(d.data, dict)
                    for n in d.data.get("needs", [])} - set(settings.value_map))
    if needs:
        action = add_values(path, needs, [d for d in diagnostics if isinstance(d.data, dict)])
        if action is not None:
            out.append(action)
    return out


def insert_barrier(uri: str, path: Path, text: str, good: CheckResult, d: lsp.Diagnostic
                   ) -> lsp.CodeAction | None:
    """`barrier(S);` before the statement that holds the second access, in the innermost
    block that holds both accesses: between them in program order, or, when the first
    stands later in a loop (the next iteration's access), at the top of the loop body."""
    array = _SHARED_ARRAY.search(d.message)
    first = _FIRST_ACCESS.search(d.message)
    module = lookup.module_at(good.program, path)
    if array is None or first is None or module is None:
        return None
    line, column = d.range.start.line, d.range.start.character
    found = lookup.find(module, line, column)
    # The array's name in the access the warning marks (or nearest around it), as the
    # checker resolved it.
    use = next((n for around in reversed(found.chain) for n in ast.walk(around)
                if isinstance(n, ast.Name) and n.name == array.group(1)), None)
    declared = good.tables.binding_of(use) if use is not None else None
    if declared is None or not isinstance(declared.node, ast.Decl) or not declared.node.spaces:
        return None
    space = declared.node.spaces[0]
    other = (int(first.group(1)) - 1, int(first.group(2)) - 1)
    target = None
    for block, stmt in zip(found.chain, found.chain[1:], strict=False):
        if isinstance(block, ast.Block) and contains(block.span, *other):
            target = stmt
    if target is None or target.span is None:
        return None
    at = target.span.line - 1
    lines = text.split("\n")
    if at >= len(lines):
        return None
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    edit = lsp.TextEdit(lsp.Range(lsp.Position(at, 0), lsp.Position(at, 0)),
                        f"{indent}barrier({space});\n")
    return lsp.CodeAction(
        title=f"Insert barrier({space}) on line {at + 1}",
        kind=lsp.CodeActionKind.QuickFix,
        diagnostics=[d],
        is_preferred=True,
        edit=lsp.WorkspaceEdit(changes={uri: [edit]}),
    )


def add_values(path: Path, needs: list[str], diagnostics: list[lsp.Diagnostic]
               ) -> lsp.CodeAction | None:
    """`values = {...}` in the mcl.toml of the document's folder (or the nearest one
    above): merged into a one-line `values` table, or appended, or a new file."""
    from mcl.settings import find_settings

    try:
        current = find_settings(path.parent)
    except Exception:  # noqa: BLE001 - a broken settings file has its own diagnostic
        return None
    added = {n: PLACEHOLDER for n in needs}
    title = "Add " + " ".join(f"-D {n}={v}" for n, v in added.items()) + " to mcl.toml"
    kind = lsp.CodeActionKind.QuickFix
    if current.file is None:
        target = path.parent / "mcl.toml"
        body = "# mcl settings (docs/user-guide.md): values of -D for feedback\n" \
            + _values_line(added) + "\n"
        uri = target.resolve().as_uri()
        edit = lsp.WorkspaceEdit(document_changes=[
            lsp.CreateFile(uri=uri, options=lsp.CreateFileOptions(ignore_if_exists=True)),
            lsp.TextDocumentEdit(lsp.OptionalVersionedTextDocumentIdentifier(uri, None), [
                lsp.TextEdit(lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), body)]),
        ])
        return lsp.CodeAction(title, kind=kind, diagnostics=diagnostics, edit=edit)
    if current.file.name != "mcl.toml":
        return None  # [tool.mcl] in pyproject.toml: left to the person
    text = current.file.read_text(encoding="utf-8")
    lines = text.split("\n")
    uri = current.file.resolve().as_uri()
    for i, line in enumerate(lines):
        if re.match(r"\s*values\s*=", line):
            if "{" not in line or "}" not in line:
                return None  # a multi-line table: left to the person
            merged = {**current.values, **added}
            replace = lsp.TextEdit(lsp.Range(lsp.Position(i, 0), lsp.Position(i, len(line))),
                                   _values_line(merged))
            return lsp.CodeAction(title, kind=kind, diagnostics=diagnostics,
                                  edit=lsp.WorkspaceEdit(changes={uri: [replace]}))
    first_table = next((i for i, line in enumerate(lines) if line.lstrip().startswith("[")),
                       len(lines))
    insert = lsp.TextEdit(lsp.Range(lsp.Position(first_table, 0),
                                    lsp.Position(first_table, 0)), _values_line(added) + "\n")
    return lsp.CodeAction(title, kind=kind, diagnostics=diagnostics,
                          edit=lsp.WorkspaceEdit(changes={uri: [insert]}))


def _values_line(values: dict[str, Any]) -> str:
    return "values = { " + ", ".join(f"{k} = {v}" for k, v in values.items()) + " }"
