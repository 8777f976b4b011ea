"""No module outside a backend's own package branches on a backend's name (docs/codegen.md,
"Backends"): commands and libraries ask the registry (mcl.backends) and call the backend,
so a new backend touches no code outside its package. The scan reads the syntax of every
module of mcl/ outside mcl/backends/<name>/ for a backend's name as a literal in a
comparison, a keyword argument (`language="cuda"`, `choices=(...)`), a parameter's
default or a dict key.

mcl/detect/ is left out: its device queries have sections named after the APIs that
answer them (OpenCL's and CUDA's device attributes), which are data of the query format,
not code generation backends.

Importing a backend's own modules names it too: the last tests list each module outside
the backends' packages that does, with why, and fail on any other (the measuring
commands, the multi-device run, `mcl profile` and the command line's register counter
ask the registry and the `Backend` protocol instead).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from mcl.backends import backend_names

ROOT = Path(__file__).resolve().parents[2]
EXEMPT = ("mcl/detect/",)


def _names_in(node: ast.AST | None, names: frozenset[str]) -> list[str]:
    """The backend names `node` is, or holds as a tuple, list or set of literals."""
    if isinstance(node, ast.Constant) and node.value in names:
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [n for e in node.elts for n in _names_in(e, names)]
    return []


def branches(source: str, names: frozenset[str]) -> list[tuple[int, str]]:
    """(line, name) of each place `source` names a backend as a branch or a choice."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        operands: list[ast.AST | None] = []
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, ast.keyword):
            operands = [node.value]
        elif isinstance(node, ast.arguments):
            operands = [*node.defaults, *node.kw_defaults]
        elif isinstance(node, ast.Dict):
            operands = list(node.keys)
        found += [(getattr(o, "lineno", 0), n) for o in operands for n in _names_in(o, names)]
    return sorted(found)


def modules() -> list[Path]:
    packages = {ROOT / "mcl" / "backends" / name for name in backend_names()}
    return [p for p in sorted((ROOT / "mcl").rglob("*.py"))
            if not any(folder in p.parents for folder in packages)
            and not p.relative_to(ROOT).as_posix().startswith(EXEMPT)]


def test_no_module_outside_a_backend_branches_on_its_name() -> None:
    names = frozenset(backend_names())
    found = [f"{p.relative_to(ROOT)}:{line}: {name!r}" for p in modules()
             for line, name in branches(p.read_text(encoding="utf-8"), names)]
    assert found == []


def test_the_scan_finds_each_kind_of_branch() -> None:
    names = frozenset({"cuda", "opencl"})
    source = '''
if backend == "cuda": pass
if language in ("opencl", "other"): pass
generate(program, language="cuda")
parser.add_argument("--lang", choices=("opencl", "cuda"))
def run(backend: str = "opencl") -> None: pass
VOCABULARY = {"cuda": 1}
title = "CUDA"  # a title, no branch
path = f"{leaf}.cuda.toml"
'''
    assert branches(source, names) == [(2, "cuda"), (3, "opencl"), (4, "cuda"),
                                       (5, "cuda"), (5, "opencl"), (6, "opencl"),
                                       (7, "cuda")]


def test_the_scan_covers_the_commands_and_codegen() -> None:
    scanned = {p.relative_to(ROOT).as_posix() for p in modules()}
    assert {"mcl/commands/run.py", "mcl/codegen/opencl.py", "mcl/codegen/c_expr.py",
            "mcl/tune/search.py", "mcl/backends/__init__.py"} <= scanned
    assert not any(p.startswith(("mcl/backends/cuda/", "mcl/backends/opencl/"))
                   for p in scanned)


# Modules outside the backends' packages that import one backend's modules, and why: what
# they need of a backend goes through the `Backend` protocol (mcl.codegen.backend) or the
# registry (mcl.backends) instead; a new entry needs a reason as good.
BACKEND_IMPORTS_ALLOWED = {
    "mcl/detect/measure.py": "the detection benchmarks are OpenCL C built by pyopencl "
    "(EXEMPT); the float16 limit is a fact of the PoCL build that comes with mcl",
}


def backend_importers() -> dict[str, list[str]]:
    """Module (path) -> the backends' modules it imports, for every module of mcl/
    outside the backends' packages that imports one, at its top or inside a function."""
    names = backend_names()
    found: dict[str, list[str]] = {}
    for p in sorted((ROOT / "mcl").rglob("*.py")):
        rel = p.relative_to(ROOT).as_posix()
        if rel.startswith(tuple(f"mcl/backends/{n}/" for n in names)):
            continue
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            targets = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found[rel] = found.get(rel, []) + [
                t for t in targets
                if any(t == f"mcl.backends.{n}" or t.startswith(f"mcl.backends.{n}.")
                       for n in names)]
    return {rel: sorted(set(mods)) for rel, mods in found.items() if mods}


def test_no_module_outside_a_backend_imports_one_but_those_listed() -> None:
    found = backend_importers()
    assert sorted(set(found) - set(BACKEND_IMPORTS_ALLOWED)) == [], \
        "ask the registry (mcl.backends.get_backend) instead"
    assert sorted(set(BACKEND_IMPORTS_ALLOWED) - set(found)) == [], \
        "no longer imports a backend: remove it from BACKEND_IMPORTS_ALLOWED"


def test_the_import_scan_sees_each_kind_of_import(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A module that imports a backend's module, at its top or inside a function, in
    either form, is found; one that asks the registry is not."""
    folder = tmp_path / "mcl"
    (folder / "commands").mkdir(parents=True)
    (folder / "commands" / "direct.py").write_text(
        "def f():\n    from mcl.backends.cuda.nvrtc import version\n")
    (folder / "commands" / "plain.py").write_text("import mcl.backends.opencl.runner\n")
    (folder / "commands" / "registry.py").write_text(
        "from mcl.backends import get_backend\nimport mcl.backends\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert backend_importers() == {
        "mcl/commands/direct.py": ["mcl.backends.cuda.nvrtc"],
        "mcl/commands/plain.py": ["mcl.backends.opencl.runner"]}
