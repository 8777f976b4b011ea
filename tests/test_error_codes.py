"""Every diagnostic code the source can emit is documented in docs/errors.md, and every code
documented there is still emitted (the feedback message codes have their own catalogue in
docs/feedback.md, checked by tests/feedback/test_report.py).

The codes are found by scanning `mcl/`: the code argument of each call that makes a
diagnostic (`error(...)`, `warning(...)`, the checkers' `_error`/`warn` helpers, ...). A code
built at run time from a template is expanded from the values the template can take."""

from __future__ import annotations

import ast
import re
import typing
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from mcl.feedback import codes as feedback_codes
from mcl.mcpl.loader import DefinitionKind

ROOT = Path(__file__).resolve().parents[1]
ERRORS_DOC = ROOT / "docs" / "errors.md"

# The callables that make a diagnostic, by the position of their code argument (a `code=`
# keyword counts wherever it stands).
CODE_ARGUMENT = {"error": 0, "warning": 0, "_error": 0, "warn": 0, "fail": 0, "_known": 2,
                 "Diagnostic": 1, "read_source": 1, "FoldError": 0}
WARNINGS = {"warning", "warn"}
# mcl.interp.compile_expr.fail prefixes the code its callers name.
PREFIXED = {"interp": "interp-"}
# Codes made from a template at run time, with the values the template can take.
TEMPLATES = {
    "mcpl-unknown-{kind}": typing.get_args(DefinitionKind),
    "mcpl-ambiguous-{kind}": typing.get_args(DefinitionKind),
}
CODE = re.compile(r"[a-z][a-z0-9_]*(-[a-z0-9_]+)*")
ROW = re.compile(r"^\| `([a-z0-9_-]+)` \|(.*)$", re.M)


def _code_arguments(tree: ast.Module) -> Iterator[tuple[str, ast.expr]]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        position = CODE_ARGUMENT.get(name)
        if position is not None and len(node.args) > position:
            yield name, node.args[position]
        yield from ((name, k.value) for k in node.keywords if k.arg == "code")


def _template(node: ast.JoinedStr) -> str:
    return "".join(part.value if isinstance(part, ast.Constant) else
                   "{" + ast.unparse(part.value) + "}"  # type: ignore[attr-defined]
                   for part in node.values)


@cache
def emitted() -> dict[str, bool]:
    """Every code a diagnostic of `mcl/` can carry (feedback message codes left out), and
    whether it can be a warning."""
    found: dict[str, bool] = {}
    templates: set[str] = set()
    for path in sorted((ROOT / "mcl").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        prefix = PREFIXED.get(path.relative_to(ROOT / "mcl").parts[0], "")
        for name, argument in _code_arguments(tree):
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                if not CODE.fullmatch(argument.value):
                    continue  # a logger's `.error("...")` or `.warning("...")`: no code
                code = (prefix if name == "fail" else "") + argument.value
                found[code] = found.get(code, False) or name in WARNINGS
            elif isinstance(argument, ast.JoinedStr):
                templates.add(_template(argument))
        # a template kept in a variable first: `code = f"..."`
        templates |= {_template(node.value) for node in ast.walk(tree)
                      if isinstance(node, ast.Assign) and isinstance(node.value, ast.JoinedStr)
                      and any(isinstance(t, ast.Name) and t.id == "code"
                              for t in node.targets)}
    templates.discard("interp-{code}")  # the prefix of `fail`, handled above
    assert templates == set(TEMPLATES), "a new code template: add its values to TEMPLATES"
    for template, values in TEMPLATES.items():
        for value in values:
            found.setdefault(template.format(kind=value), False)
    declared = feedback_codes.declared()
    return {code: warns for code, warns in found.items() if code not in declared}


def documented() -> dict[str, str]:
    """docs/errors.md's rows: code -> the rest of its row."""
    rows = ROW.findall(ERRORS_DOC.read_text(encoding="utf-8"))
    table = dict(rows)
    assert len(table) == len(rows), "a code is documented twice"
    return table


def test_the_scan_finds_the_codes_of_every_package() -> None:
    codes = emitted()
    assert {"mcpl-unknown-import", "codegen-above-leaf", "hdl-unknown-reference",
            "interp-index-out-of-bounds", "mcpl-division-by-zero", "mcpl-unknown-type",
            "mcpl-io", "hdl-io", "run-no-opencl", "tune-space"} <= set(codes)
    assert not set(codes) & set(feedback_codes.declared())
    assert codes["mcpl-unused-variable"] and not codes["mcpl-unknown-name"]


def test_every_emitted_code_is_documented() -> None:
    missing = sorted(set(emitted()) - set(documented()))
    assert missing == [], f"codes without a line in docs/errors.md: {missing}"


def test_every_documented_code_is_emitted() -> None:
    stale = sorted(set(documented()) - set(emitted()))
    assert stale == [], f"docs/errors.md documents codes nothing emits: {stale}"


def test_codes_that_can_be_warnings_say_so() -> None:
    table = documented()
    unmarked = sorted(c for c, warns in emitted().items() if warns and "*warning*" not in table[c])
    assert unmarked == []
    marked = sorted(c for c, row in table.items() if "*warning*" in row and not emitted()[c])
    assert marked == []
