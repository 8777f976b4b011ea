"""Whether a for-loop's body assigns its variable (`mcl.codegen.unroll`, which decides the
trip count behind `#pragma unroll`): the same names as a walk of the body finds, each
node examined a bounded number of times however deep the nest (a walk per loop took
time quadratic in the depth: a generated nest of 500 loops, docs/reliability.md,
"Fuzzing")."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.codegen import unroll
from mcl.deep_stack import run_with_deep_stack
from mcl.hdl.library import default_library
from mcl.mcpl.ast import Assign, For, IncDec, Name, walk
from mcl.mcpl.loader import load_program

ROOT = Path(__file__).resolve().parents[2]


def _walked(node: object) -> frozenset[str]:
    return frozenset(n.target.name for n in walk(node)
                     if isinstance(n, Assign | IncDec) and isinstance(n.target, Name))


def _loops(path: Path) -> list[For]:
    program = load_program(path, (), default_library())
    return [n for f in program.main.functions for n in walk(f.body) if isinstance(n, For)]


def test_the_names_are_those_a_walk_finds() -> None:
    loops = [loop for path in sorted((ROOT / "kernels").glob("*/*.mcpl"))
             for loop in _loops(path)]
    assert len(loops) > 100
    for loop in loops:
        assert unroll.assigned_names(loop.body) == _walked(loop.body)
        assert unroll.assigned_names(loop) == _walked(loop)


def test_each_node_is_examined_a_bounded_number_of_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    depth = 400
    body = "s += b[i]; q++;"
    for level in range(depth):
        body = f"for (int f{level} = 0; f{level} < 1; f{level}++) {{ {body} }}"
    path = tmp_path / "nest.mcpl"
    path.write_text("perfect void k(int n, main float[n] a, main float[n] b) {\n"
                    "  foreach (int i in n threads) {\n    float s = 0.0; int q = 0;\n    "
                    f"{body}\n    a[i] = s;\n  }}\n}}\n", encoding="utf-8")
    loops = run_with_deep_stack(lambda: _loops(path))
    nodes = len(list(walk(loops[0])))
    examined: list[object] = []
    children = unroll.children

    def counted(node: object) -> object:
        examined.append(node)
        return children(node)
    monkeypatch.setattr(unroll, "children", counted)
    for loop in loops:  # as code generation asks, outermost first
        assert unroll.for_trip_count(loop, {}, lambda name: False) == 1
    assert len(examined) <= 2 * nodes  # a walk per loop: about depth / 2 times as many
    assert unroll.assigned_names(loops[0].body) >= {"q", "f0"}
