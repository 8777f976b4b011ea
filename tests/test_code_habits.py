"""Habits of the code that a reader relies on: comments and messages cite the paper's
sections and the docs, never the project's issue numbers (an issue is closed and gone; the
reason it gave belongs in the comment or in docs/)."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path
from typing import cast

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


@cache
def compiler_trees() -> tuple[tuple[str, ast.Module], ...]:
    """Every module of `mcl/`, parsed once for the scans below: (path, tree)."""
    return tuple((str(path.relative_to(ROOT)), ast.parse(path.read_text(encoding="utf-8")))
                 for path in sorted((ROOT / "mcl").rglob("*.py")))


def id_calls(tree: ast.Module) -> list[int]:
    """Lines of the calls of the built-in `id` in `tree`."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "id"]


def test_id_calls_are_found() -> None:
    planted = "memo = {}\nmemo[id(node)] = 1\nseen = {id(x) for x in xs}\nkey = f'{id(e)}'\n"
    assert id_calls(ast.parse(planted)) == [2, 3, 4]
    assert id_calls(ast.parse("node.id = 1\nx = ids(y)\n")) == []


def test_no_id_keys_in_the_compiler() -> None:
    used = [f"{path}:{line}" for path, tree in compiler_trees() if path not in ID_ALLOWED
            for line in id_calls(tree)]
    assert used == []


def program_any(tree: ast.Module) -> list[int]:
    """Lines where a parameter or field named `program` is annotated `Any`: a program is a
    `Program`, a `Module` or a `CheckedProgram`, and mypy checks what is done with it."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.arg == "program":
            annotation = node.annotation
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.target.id == "program":
            annotation = node.annotation
        else:
            continue
        if annotation is not None and "Any" in ast.unparse(annotation):
            found.append(node.lineno)
    return sorted(found)


def test_program_any_is_found() -> None:
    planted = "def f(program: Any) -> None: ...\nclass C:\n    program: 'Any'\n" \
              "def g(program: Program, other: Any) -> None: ...\n"
    assert program_any(ast.parse(planted)) == [1, 3]


def test_no_program_is_typed_any() -> None:
    loose = [f"{path}:{line}" for path, tree in compiler_trees()
             for line in program_any(tree)]
    assert loose == []


def test_the_language_server_imports_nothing_from_the_commands() -> None:
    # docs/architecture.md, "Layers import downwards only": the server calls the pipeline
    # as `mcl check` does; a command's private helper is no API.
    imports = [
        f"{path}:{node.lineno}"
        for path, tree in compiler_trees() if path.startswith("mcl/lsp/")
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mcl.commands")
        or isinstance(node, ast.Import)
        and any(a.name.startswith("mcl.commands") for a in node.names)
    ]
    assert imports == []


# docs/architecture.md, "Dispatch on node kinds": a pass that chooses by the kind of a node
# says so with `match` (exhaustive over a closed union where mypy can check it), not with a
# chain of `isinstance` tests, which silently skips a kind it forgot.
LONGEST_CHAIN = 3


def _isinstance_subject(test: ast.expr) -> str | None:
    """The subject of `isinstance(subject, ...)` (or of the first test of an `and`, which
    a `case` with a guard says), unparsed; None for any other test."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        test = test.values[0]
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) \
            and test.func.id == "isinstance" and test.args:
        return ast.unparse(test.args[0])
    return None


def _elif_chain(node: ast.If) -> tuple[str | None, int]:
    """The subject and length of the `if isinstance(x, ...)/elif isinstance(x, ...)` chain
    that starts at `node`."""
    subject, length = _isinstance_subject(node.test), 0
    current: ast.stmt = node
    while isinstance(current, ast.If) and subject is not None \
            and _isinstance_subject(current.test) == subject:
        length += 1
        if len(current.orelse) != 1:
            break
        current = current.orelse[0]
    return subject, length


def _exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue))


def isinstance_chains(tree: ast.Module) -> list[int]:
    """Lines where a chain of more than LONGEST_CHAIN `isinstance` tests on one subject
    starts: `if/elif` chains, and runs of `if isinstance(x, ...): return ...` statements."""
    found: set[int] = set()
    inner: set[ast.AST] = set()  # the elif branches of a chain already counted (ast
    # nodes hash by identity)
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and node not in inner:
            subject, length = _elif_chain(node)
            current: ast.stmt = node
            for _ in range(length - 1):
                current = cast(ast.If, current).orelse[0]
                inner.add(current)
            if subject is not None and length > LONGEST_CHAIN:
                found.add(node.lineno)
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if not isinstance(statements, list):
                continue
            run_subject, run_start, run = None, 0, 0
            for stmt in statements + [ast.Pass()]:
                subject = _isinstance_subject(stmt.test) \
                    if isinstance(stmt, ast.If) and _exits(stmt.body) else None
                if subject is not None and subject == run_subject:
                    run += 1
                    continue
                if run > LONGEST_CHAIN:
                    found.add(run_start)
                run_subject, run_start, run = subject, getattr(stmt, "lineno", 0), 1
    return sorted(found)


def test_isinstance_chains_are_found() -> None:
    planted = (
        "def f(n):\n"
        "    if isinstance(n, A):\n        return 1\n"
        "    elif isinstance(n, B):\n        return 2\n"
        "    elif isinstance(n, C) and n.x:\n        return 3\n"
        "    elif isinstance(n, D):\n        return 4\n"
        "def g(n):\n"
        "    if isinstance(n, A):\n        return 1\n"
        "    if isinstance(n, B):\n        return 2\n"
        "    if isinstance(n, C):\n        return 3\n"
        "    if isinstance(n, D):\n        return 4\n"
        "    return 0\n"
        "def h(n, m):\n"
        "    if isinstance(n, A):\n        return 1\n"
        "    elif isinstance(m, B):\n        return 2\n"
        "    elif isinstance(n, C):\n        return 3\n"
        "    elif isinstance(n, D):\n        return 4\n"
        "    x = 1\n"
        "    if isinstance(n, A):\n        return 1\n"
        "    if isinstance(n, B):\n        return 2\n"
        "    if isinstance(n, C):\n        return 3\n"
    )
    assert isinstance_chains(ast.parse(planted)) == [2, 11]


def test_no_long_isinstance_chains_in_the_compiler() -> None:
    chains = [f"{path}:{line}" for path, tree in compiler_trees()
              for line in isinstance_chains(tree)]
    assert chains == []
