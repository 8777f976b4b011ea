"""The feedback package imports in layers, without a cycle (docs/architecture.md,
"Feedback in layers"): every import between two of its modules counts, at the top of a
module or inside a function (a lazy import is a dependency all the same), except those
under `if TYPE_CHECKING:`, which only the type checker follows."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "mcl.feedback"


def _modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    found = {}
    for path in (ROOT / "mcl" / "feedback").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes under an `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            out |= {id(inner) for inner in ast.walk(node)}
    return out


def imported(name: str, path: Path, modules: set[str]) -> set[str]:
    """The modules of the package that module `name` imports, anywhere in it."""
    tree = ast.parse(path.read_text())
    skipped = _type_checking_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, one level up per extra dot
                parts = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            # `from mcl.feedback import lockstep` imports the module lockstep
            targets |= {base, *(f"{base}.{alias.name}" for alias in node.names)}
    return {t for t in targets if t in modules and t != name}


def import_graph() -> nx.DiGraph:
    modules = _modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        graph.add_edges_from((name, target) for target in imported(name, path, set(modules)))
    return graph


def test_no_import_cycle_among_the_feedback_modules() -> None:
    graph = import_graph()
    assert len(graph) > 40 and graph.number_of_edges() > 100  # the scan sees the package
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert cycles == [], f"import cycles in {PACKAGE}: {cycles}"


def test_the_scan_counts_lazy_imports_and_skips_type_checking_ones(tmp_path) -> None:
    source = tmp_path / "example.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from mcl.feedback import messages\n"
        "if TYPE_CHECKING:\n"
        "    from mcl.feedback.registry import analyse\n"
        "def f():\n"
        "    from mcl.feedback.codes import title\n"
        "    from .values import evaluate\n")
    modules = {"mcl.feedback.messages", "mcl.feedback.registry", "mcl.feedback.codes",
               "mcl.feedback.values", "mcl.feedback.example"}
    assert imported("mcl.feedback.example", source, modules) == {
        "mcl.feedback.messages", "mcl.feedback.codes", "mcl.feedback.values"}


def test_the_engine_sits_above_the_analyses_and_the_records_below() -> None:
    """The layers the cycle test keeps apart: the catalogue of codes reads the registry,
    which imports every analysis; the findings records import only the messages."""
    graph = import_graph()
    assert nx.has_path(graph, "mcl.feedback.codes", "mcl.feedback.analyses.timemodel")
    below = nx.descendants(graph, "mcl.feedback.findings")
    assert below <= {"mcl.feedback.messages", "mcl.feedback.message_code"}
