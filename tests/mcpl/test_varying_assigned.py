"""The variables a statement assigns (`mcl.mcpl.varying.assigned_names`, which the barrier
check and translation's guards ask of every loop): found once per node from its
children's, the same names as a walk of the statement finds, and each node examined a
bounded number of times however deep the nest (a walk per node was quadratic in the
depth: a generated nest of 500 loops, docs/reliability.md, "Fuzzing")."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.deep_stack import run_with_deep_stack
from mcl.hdl.library import default_library
from mcl.mcpl import ast, varying
from mcl.mcpl.loader import load_program
from mcl.mcpl.visitor import NodeVisitor

ROOT = Path(__file__).resolve().parents[2]


class _Walked(NodeVisitor):
    """The names by a walk of the statement (a for loop's own init and step left out)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.body)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.names |= {n for n in [ast.root_name(node.target)] if n}

    def visit_IncDec(self, node: ast.IncDec) -> None:
        self.names |= {n for n in [ast.root_name(node.target)] if n}

    def visit_Swap(self, node: ast.Swap) -> None:
        self.names |= {n for n in (ast.root_name(node.left), ast.root_name(node.right)) if n}


def _walked(node: object) -> set[str]:
    found = _Walked()
    found.visit(node)
    return found.names


def test_the_names_are_those_a_walk_finds() -> None:
    library = default_library()
    statements = 0
    for path in sorted((ROOT / "kernels").glob("*/*.mcpl")):
        program = load_program(path, (), library)
        for function in program.main.functions:
            for node in ast.walk(function.body):
                if isinstance(node, ast.Stmt):
                    statements += 1
                    assert varying.assigned_names(node) == _walked(node), (path, node)
    assert statements > 1000


def test_each_node_is_examined_a_bounded_number_of_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    depth = 400
    body = "s += b[i]; a[i] = s;"
    for level in range(depth):
        body = f"for (int f{level} = 0; f{level} < 1; f{level}++) {{ {body} }}"
    path = tmp_path / "nest.mcpl"
    path.write_text("perfect void k(int n, main float[n] a, main float[n] b) {\n"
                    "  foreach (int i in n threads) {\n    float s = 0.0;\n    "
                    f"{body}\n  }}\n}}\n", encoding="utf-8")
    program = run_with_deep_stack(lambda: load_program(path, (), default_library()))
    loops = [n for n in ast.walk(program.main.functions[0].body) if isinstance(n, ast.For)]
    assert len(loops) == depth
    nodes = len(list(ast.walk(loops[0])))
    examined: list[object] = []
    below = varying._assigning_children

    def counted(node: object) -> list[object]:
        examined.append(node)
        return below(node)
    monkeypatch.setattr(varying, "_assigning_children", counted)
    for loop in loops:  # as the barrier check asks, outermost first
        assert varying.assigned_names(loop) == {"s", "a"}
    assert len(examined) <= 2 * nodes  # a walk per loop: about depth / 2 times as many
