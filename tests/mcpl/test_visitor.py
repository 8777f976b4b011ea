"""The AST's one traversal mechanism: dispatch by node class, and a loud fallback.

A node kind the passes were not taught must stop them with `UnknownNodeError`, never be
skipped: the tests build such kinds here, outside `mcl.mcpl.ast`."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mcl.mcpl import ast
from mcl.mcpl.parse import parse_source
from mcl.mcpl.visitor import NodeVisitor, StrictVisitor, UnknownNodeError

SOURCE = """\
perfect void f(int n, float[n] a) {
    foreach (int i in n threads) {
        float x = a[i] * 2.0;
        if (x > 1.0) { a[i] = x + 1.0; }
    }
}
"""


@dataclass(frozen=True)
class Widget:
    """A statement kind that `mcl.mcpl.ast` does not define."""

    value: ast.Expr
    span: object = None


@dataclass(frozen=True)
class Decl:
    """Same class name as `ast.Decl`, but not an AST node: dispatch must not confuse them."""

    name: str
    span: object = None


def body() -> ast.Block:
    return parse_source(SOURCE, "t.mcpl").functions[0].body


def with_stranger(stranger: object) -> ast.Block:
    b = body()
    return ast.Block((*b.stmts, stranger))  # type: ignore[arg-type]


class CountNames(NodeVisitor):
    def __init__(self) -> None:
        self.names: list[str] = []

    def visit_Name(self, node: ast.Name) -> None:
        self.names.append(node.name)


class SeesDecl(NodeVisitor):
    def visit_Decl(self, node: ast.Decl) -> str:
        return "decl"


class Strict(StrictVisitor):
    def visit_Block(self, node: ast.Block) -> list[str]:
        return [self.visit(s) for s in node.stmts]

    def visit_Foreach(self, node: ast.Foreach) -> str:
        return "foreach"


def doubled(node: object) -> ast.FloatLit | None:
    return ast.FloatLit(node.value * 2) if isinstance(node, ast.FloatLit) else None


def test_visitor_dispatches_by_class_and_searches_the_rest() -> None:
    v = CountNames()
    v.visit(body())
    assert sorted(v.names) == ["a", "a", "i", "i", "n", "x", "x"]


def test_extra_arguments_reach_the_visit_methods() -> None:
    class Depth(NodeVisitor):
        def __init__(self) -> None:
            self.seen: list[tuple[str, int]] = []

        def visit_Block(self, node: ast.Block, depth: int) -> None:
            self.seen.append(("block", depth))
            for s in node.stmts:
                self.visit(s, depth + 1)

    v = Depth()
    v.visit(body(), 0)
    # generic_visit passes the depth on unchanged: foreach and if do not add a level
    assert v.seen == [("block", 0), ("block", 1), ("block", 2)]


def test_transformer_rebuilds_only_what_changed() -> None:
    b = body()
    new = ast.transform(b, doubled)
    floats = [n.value for n in ast.walk(new) if isinstance(n, ast.FloatLit)]
    assert sorted(floats) == [2.0, 2.0, 4.0]
    assert [n.value for n in ast.walk(b) if isinstance(n, ast.FloatLit)] == [2.0, 1.0, 1.0]
    unchanged = ast.transform(b, lambda n: None)
    assert unchanged is b


def test_strict_visitor_rejects_a_known_kind_without_a_rule() -> None:
    assert Strict().visit(body()) == ["foreach"]
    with pytest.raises(UnknownNodeError, match="Strict has no rule for Decl"):
        Strict().visit(ast.Block((ast.Decl(ast.Prim("int"), "k"),)))


@pytest.mark.parametrize("make", [CountNames, SeesDecl, Strict])
def test_every_visitor_fails_loudly_on_an_unknown_node_kind(make: type[NodeVisitor]) -> None:
    tree = with_stranger(Widget(ast.IntLit(1)))
    with pytest.raises(UnknownNodeError, match="Widget is not an MCPL AST node kind"):
        make().visit(tree)


def test_a_namesake_of_a_node_class_is_not_dispatched_as_that_class() -> None:
    with pytest.raises(UnknownNodeError, match="Decl is not an MCPL AST node kind"):
        SeesDecl().visit(Decl("k"))
    assert SeesDecl().visit(ast.Decl(ast.Prim("int"), "k")) == "decl"


def test_walk_children_and_transform_fail_loudly_too() -> None:
    tree = with_stranger(Widget(ast.IntLit(1)))
    with pytest.raises(UnknownNodeError):
        list(ast.walk(tree))
    with pytest.raises(UnknownNodeError):
        ast.transform(tree, lambda n: None)
    with pytest.raises(UnknownNodeError):
        list(ast.children(Widget(ast.IntLit(1))))
