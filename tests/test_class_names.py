"""Every class of mcl/ has a name no other class of mcl/ has: a reader who meets `Scope`
or `Session` in a traceback, a type annotation or an import knows which one it is, and a
concept that two modules both define is seen (and merged where it is one concept).
Classes defined inside functions count too. A name that must stay twice goes in
DUPLICATES_ALLOWED with why."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Class name -> why two modules define it. Empty: every name is defined once.
DUPLICATES_ALLOWED: dict[str, str] = {}


def class_definitions(folder: Path) -> dict[str, list[str]]:
    """Class name -> `path:line` of each definition in the modules under `folder`."""
    found: dict[str, list[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                where = f"{path.relative_to(folder.parent).as_posix()}:{node.lineno}"
                found.setdefault(node.name, []).append(where)
    return found


def duplicates(folder: Path) -> dict[str, list[str]]:
    return {name: places for name, places in class_definitions(folder).items()
            if len(places) > 1}


def test_no_class_name_is_defined_twice_but_those_listed() -> None:
    found = duplicates(ROOT / "mcl")
    assert {n: p for n, p in found.items() if n not in DUPLICATES_ALLOWED} == {}, \
        "rename one (or merge them where they are one concept)"
    assert sorted(set(DUPLICATES_ALLOWED) - set(found)) == [], \
        "defined once now: remove it from DUPLICATES_ALLOWED"


def test_the_scan_finds_nested_and_private_classes(tmp_path: Path) -> None:
    folder = tmp_path / "mcl"
    (folder / "a").mkdir(parents=True)
    (folder / "a" / "one.py").write_text("class Scope:\n    pass\nclass _Walk:\n    pass\n")
    (folder / "two.py").write_text(
        "def f():\n    class Scope:\n        pass\n\nclass Other:\n    class _Walk:\n"
        "        pass\n")
    assert duplicates(folder) == {"Scope": ["mcl/a/one.py:1", "mcl/two.py:2"],
                                  "_Walk": ["mcl/a/one.py:3", "mcl/two.py:6"]}
