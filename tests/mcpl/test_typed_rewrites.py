"""A checked tree rewritten after the check keeps its side tables true
(docs/architecture.md, "The checker's side tables"): `SideTables.rewrite` carries the
entries to the nodes a rewrite rebuilds, and `mcl.mcpl.typed.Typed` types the nodes a
pass builds by the checker's own rules."""

from __future__ import annotations

import textwrap
import typing
from pathlib import Path

from check_support import library

from mcl import pipeline
from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl import types as T
from mcl.mcpl.checked import CheckedProgram
from mcl.mcpl.scopes import Kind
from mcl.mcpl.sidetables import SideTables
from mcl.mcpl.typed import Typed, binary_type

MIXED = """\
perfect void k(int n, float[n] a, int[n] b, byte[n] c) {
  foreach (int i in n threads) {
    a[i] = a[i] * 2.0 + b[i] / 3 - toFloat(c[i] % 2);
    b[i] = b[i] << 1 | c[i] & 3;
    if (i < n - 1 && a[i] != 0.0 || b[i] == 7) {
      c[i] = c[i] + 1;
    }
  }
}
"""


def _checked(tmp_path: Path, text: str) -> CheckedProgram:
    path = tmp_path / "k.mcpl"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return pipeline.checked_at(path, [], library())


def test_typed_binary_agrees_with_the_checker(tmp_path: Path) -> None:
    """Rebuilding each binary expression of a checked kernel with `Typed` gives the type
    the checker gave it: one rule for both."""
    checked = _checked(tmp_path, MIXED)
    tables = checked.tables.copy()
    typed = Typed(tables)
    binaries = [e for e in ast.walk(checked.main) if isinstance(e, ast.Binary)]
    assert {e.op for e in binaries} >= {"*", "+", "/", "-", "%", "<<", "|", "&", "<", "&&",
                                        "!=", "||", "=="}
    for e in binaries:
        built = typed.binary(e.op, e.left, e.right)
        assert tables.type_of(built) == checked.type_of(e), e
    # C's usual conversions: a byte computes as an int, an int with a float as a float.
    assert binary_type("+", T.Scalar("byte"), T.Scalar("byte")) == T.INT
    assert binary_type("*", T.INT, T.FLOAT) == T.FLOAT
    assert binary_type("&", T.BOOL, T.BOOL) == T.BOOL


def test_a_rewrite_carries_the_entries_and_keeps_what_it_built_typed(
        tmp_path: Path) -> None:
    checked = _checked(tmp_path, MIXED)
    tables = checked.tables.copy()
    typed = Typed(tables)
    seen: list[T.VType | None] = []

    def halve(node: object) -> object | None:
        """Every literal 2.0 becomes 1.0 + 1.0; every `x * y` is seen with typed operands."""
        if isinstance(node, ast.FloatLit) and node.value == 2.0:
            return typed.binary("+", typed.float_lit(1.0), typed.float_lit(1.0))
        if isinstance(node, ast.Binary) and node.op == "*":
            seen.extend((tables.type_of(node.left), tables.type_of(node.right)))
        return None

    main = tables.rewrite(checked.main, halve)
    assert main is not checked.main and seen == [T.FLOAT, T.FLOAT]
    exprs = [e for e in ast.walk(main) if isinstance(e, typing.get_args(ast.Expr))]
    assert exprs and all(Ref(e) in tables.types for e in exprs)
    # The rebuilt statement's names keep their declarations (the checker's bindings).
    a = next(p for p in main.functions[0].params if p.name == "a")
    binding = checked.tables.binding_declared_by(a)
    assert binding is not None
    uses = [n for n in ast.walk(main) if isinstance(n, ast.Name) and n.name == "a"]
    assert uses and all(tables.binding_of(n) is binding for n in uses)
    # The checker's own tables are left as they were.
    assert all(Ref(e) not in checked.tables.types for e in exprs
               if isinstance(e, ast.FloatLit) and e.value == 1.0)


def test_a_new_parameter_is_declared_and_its_uses_bound() -> None:
    tables = SideTables()
    typed = Typed(tables)
    param, binding = typed.param(ast.Prim("int"), "first")
    assert tables.binding_declared_by(param) is binding
    assert (binding.kind, binding.type, binding.node) == (Kind.PARAM, T.INT, param)
    uses = [typed.use(binding), typed.use(binding)]
    assert list(tables.uses_of(binding)) == uses
    assert all(tables.type_of(u) == T.INT for u in uses)
