"""Habits of the code that a reader relies on: comments and messages cite the paper's
sections and the docs, never the project's issue numbers (an issue is closed and gone; the
reason it gave belongs in the comment or in docs/)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ISSUE = re.compile(r"\b[Ii]ssues? \d+")


def test_no_issue_numbers_in_the_compiler_or_its_descriptions() -> None:
    cited = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for folder in ("mcl", "hwdescs")
        for path in sorted((ROOT / folder).rglob("*"))
        if path.suffix in {".py", ".tx", ".hdl", ".toml", ".json"}
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ISSUE.search(line)
    ]
    assert cited == []


# Where `id()` may be hashed, and why. AST nodes compare by value and an `id()` in a memo
# outlives the object it names (the address is reused by the next allocation): a place in
# the tree is a key as `mcl.identity.Ref`, which holds the object, and an object that
# hashes by identity (an `eq=False` dataclass) is a key as it is.
ID_ALLOWED = {
    "mcl/identity.py": "Ref hashes the id() of the object it holds alive",
}


def id_calls(source: str) -> list[int]:
    """Lines of the calls of the built-in `id` in `source`."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "id"]


def test_id_calls_are_found() -> None:
    planted = "memo = {}\nmemo[id(node)] = 1\nseen = {id(x) for x in xs}\nkey = f'{id(e)}'\n"
    assert id_calls(planted) == [2, 3, 4]
    assert id_calls("node.id = 1\nx = ids(y)\n") == []


def test_no_id_keys_in_the_compiler() -> None:
    used = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "mcl").rglob("*.py"))
        if str(path.relative_to(ROOT)) not in ID_ALLOWED
        for line in id_calls(path.read_text(encoding="utf-8"))
    ]
    assert used == []
