"""`ast.children` reads only the fields whose annotations can hold a node (names,
operators and literal values are skipped, found once per class). Over every node of
every shipped kernel it must give what a look at every field gives: the same children,
in the same order, so that no walk misses a node an annotation leaves out."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from mcl.mcpl import ast
from mcl.mcpl.parse import parse_file

KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def _every_field(node: object) -> list[object]:
    """The children as the walk found them before: every field but `span`."""
    out: list[object] = []
    for f in fields(node):  # type: ignore[arg-type]
        if f.name == "span":
            continue
        value = getattr(node, f.name)
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            inner = item if isinstance(item, tuple) else (item,)
            out += [x for x in inner if hasattr(x, "__dataclass_fields__")]
    return out


@pytest.mark.parametrize("path", sorted(KERNELS.glob("*/*.mcpl")),
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_children_are_those_of_every_field(path: Path) -> None:
    module = parse_file(path)
    nodes = list(ast.walk(module))
    assert len(nodes) > 10
    for node in nodes:
        assert list(ast.children(node)) == _every_field(node)
        assert all(a is b for a, b in zip(ast.children(node), _every_field(node),
                                          strict=True))


def test_the_fields_left_out_hold_no_node() -> None:
    assert ast._node_fields(ast.Name) == ()
    assert ast._node_fields(ast.Binary) == ("left", "right")
    assert ast._node_fields(ast.Decl) == ("type", "init", "view")
