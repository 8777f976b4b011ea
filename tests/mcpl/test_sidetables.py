"""The checker's side tables (mcl/mcpl/sidetables.py): the type of each expression and the
declaration each name stands for, by node identity, as `CheckedProgram` exposes them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from check_support import library

from mcl import pipeline
from mcl.mcpl import ast
from mcl.mcpl import types as T
from mcl.mcpl.builtins import BUILTINS, SIGNATURE_CALLS
from mcl.mcpl.checked import CheckedProgram
from mcl.mcpl.scopes import Kind


def _checked(tmp_path: Path, text: str, level: str | None = None) -> CheckedProgram:
    path = tmp_path / "k.mcpl"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return pipeline.checked_at(path, [tmp_path], library(), level)


def _names(node: object, name: str) -> list[ast.Name]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Name) and n.name == name]


def test_shadowing_binds_each_use_to_its_own_declaration(tmp_path: Path) -> None:
    checked = _checked(tmp_path, """\
        perfect void k(int n, float[n] a) {
          foreach (int i in n threads) {
            float x = a[i];
            for (int j = 0; j < 2; j++) {
              float x = a[i] * 2.0;
              a[i] = x;
            }
            a[i] = x;
          }
        }
        """)
    body = checked.main.functions[0].body
    foreach = body.stmts[0]
    assert isinstance(foreach, ast.Foreach)
    assert isinstance(foreach.body, ast.Block)
    outer_decl, loop, last = foreach.body.stmts
    assert isinstance(loop, ast.For) and isinstance(loop.body, ast.Block)
    inner_decl = loop.body.stmts[0]
    # The two `x` uses are equal nodes (Name('x')), yet bound to different declarations.
    inner_use, outer_use = [*_names(loop.body.stmts[1], "x"), *_names(last, "x")]
    assert inner_use == outer_use
    inner, outer = checked.binding_of(inner_use), checked.binding_of(outer_use)
    assert inner is not None and outer is not None
    assert inner.node is inner_decl and outer.node is outer_decl
    assert inner.kind is outer.kind is Kind.LOCAL
    # One binding per declaration: every `i` is the foreach's index.
    indices = {checked.binding_of(n) for n in _names(foreach.body, "i")}
    assert len(indices) == 1
    [index] = indices
    assert index is not None and index.node is foreach and index.kind is Kind.INDEX
    assert index is checked.tables.binding_declared_by(foreach)
    loop_var = checked.binding_of(_names(loop.cond, "j")[0])
    assert loop_var is not None and loop_var.kind is Kind.LOOP and loop_var.node is loop.init


def test_function_parameters_and_their_types(tmp_path: Path) -> None:
    checked = _checked(tmp_path, """\
        perfect void k(float[n] a, int n, const float s) {
          foreach (int i in n threads) {
            a[i] = a[i] * s + toFloat(i);
          }
        }
        """)
    f = checked.main.functions[0]
    a, n, s = (checked.tables.binding_declared_by(p) for p in f.params)
    assert a is not None and n is not None and s is not None
    # `n` is used in `a`'s type before its own type is resolved: still int.
    assert n.type == T.INT and n.kind is Kind.PARAM
    assert a.type == T.Array(T.FLOAT, (1,))
    assert s.const and s.type == T.FLOAT
    uses = list(checked.tables.uses_of(n))
    assert len(uses) == 2 and all(isinstance(u, ast.Name) for u in uses)
    assign = f.body.stmts[0].body.stmts[0]  # type: ignore[union-attr]
    assert isinstance(assign, ast.Assign)
    assert checked.type_of(assign.target) == T.FLOAT
    value = assign.value
    assert isinstance(value, ast.Binary) and isinstance(value.right, ast.Call)
    assert checked.type_of(value) == T.FLOAT
    call = value.right
    bound = checked.binding_of(call)
    assert bound is not None and bound.kind is Kind.BUILTIN
    assert bound.node is BUILTINS["toFloat"]
    assert checked.type_of(call.args[0]) == T.INT


def test_constants_and_calls_of_user_functions(tmp_path: Path) -> None:
    checked = _checked(tmp_path, """\
        const int N = 4;
        const float SCALE = 2.0;
        perfect float twice(float x) {
          return x * SCALE;
        }
        perfect void k(float[N] a) {
          foreach (int i in N threads) {
            float SCALE = 1.0;
            a[i] = twice(a[i]) + SCALE;
          }
        }
        """)
    module = checked.main
    n_decl, scale_decl = module.constants
    twice, k = module.functions
    n_uses = _names(module, "N")
    assert len(n_uses) == 2
    assert {checked.binding_of(u).node is n_decl for u in n_uses} == {True}  # type: ignore[union-attr]
    scale_in_twice = checked.binding_of(_names(twice, "SCALE")[0])
    scale_in_k = checked.binding_of(_names(k, "SCALE")[0])
    assert scale_in_twice is not None and scale_in_twice.node is scale_decl
    assert scale_in_twice.kind is Kind.CONSTANT and scale_in_twice.type == T.FLOAT
    assert scale_in_k is not None and scale_in_k.kind is Kind.LOCAL  # the local shadows it
    [call] = [c for c in ast.walk(k) if isinstance(c, ast.Call)]
    callee = checked.binding_of(call)
    assert callee is not None and callee.node is twice and callee.kind is Kind.FUNCTION
    assert callee.type == T.FLOAT and checked.type_of(call) == T.FLOAT


def test_imported_exports_bind_to_the_other_module(tmp_path: Path) -> None:
    (tmp_path / "util").mkdir()
    (tmp_path / "util" / "scale.mcpl").write_text(
        "package util;\nmodule scale;\nimport perfect;\nexport twice, FACTOR;\n"
        "const float FACTOR = 2.0;\n"
        "perfect float twice(float x) {\n  return FACTOR * x;\n}\n", encoding="utf-8")
    checked = _checked(tmp_path, """\
        import util.scale;
        perfect void k(int n, float[n] a) {
          foreach (int i in n threads) {
            a[i] = twice(a[i]) * FACTOR;
          }
        }
        """)
    library_module = checked.program.modules["util.scale"]
    [factor] = library_module.constants
    [twice] = library_module.functions
    k = checked.main.functions[0]
    [call] = [c for c in ast.walk(k) if isinstance(c, ast.Call)]
    assert checked.binding_of(call).node is twice  # type: ignore[union-attr]
    bound = checked.binding_of(_names(k, "FACTOR")[0])
    assert bound is not None and bound.node is factor
    # The imported module's own use of FACTOR is the same binding.
    assert checked.binding_of(_names(twice, "FACTOR")[0]) is bound
    assert bound.node.span is not None and bound.node.span.file.endswith("scale.mcpl")


def test_struct_fields_and_types(tmp_path: Path) -> None:
    checked = _checked(tmp_path, """\
        type Complex { float real; float imag; }
        perfect void k(int n, Complex[n] c, float[n] out) {
          foreach (int i in n threads) {
            out[i] = c[i].real * c[i].imag;
          }
        }
        """)
    [complex_] = checked.main.types
    real, imag = complex_.fields
    fields = [f for f in ast.walk(checked.main.functions[0]) if isinstance(f, ast.Field)]
    assert [checked.binding_of(f).node for f in fields] == [real, imag]  # type: ignore[union-attr]
    assert {checked.binding_of(f).kind for f in fields} == {Kind.FIELD}  # type: ignore[union-attr]
    assert [checked.type_of(f.base) for f in fields] == [T.Struct("Complex")] * 2
    [named] = [t for t in ast.walk(checked.main.functions[0]) if isinstance(t, ast.NamedType)]
    typedef = checked.binding_of(named)
    assert typedef is not None and typedef.node is complex_ and typedef.kind is Kind.TYPE


def test_views_bind_to_the_view_and_to_the_viewed_array(tmp_path: Path) -> None:
    checked = _checked(tmp_path, """\
        perfect void k(int n, float[n] a) {
          a as float[n / 2][2] pairs;
          foreach (int i in n / 2 threads) {
            pairs[i][0] = pairs[i][1];
          }
        }
        """)
    f = checked.main.functions[0]
    view_decl = f.body.stmts[0]
    assert isinstance(view_decl, ast.ViewDecl)
    viewed = checked.binding_of(view_decl)
    assert viewed is not None and viewed.node is f.params[1]
    uses = _names(f, "pairs")
    assert len(uses) == 2
    for use in uses:
        bound = checked.binding_of(use)
        assert bound is not None and bound.node is view_decl.view and bound.kind is Kind.VIEW
    assert bound.type == T.Array(T.FLOAT, (1, 1))
    element = f.body.stmts[1].body.stmts[0].target  # type: ignore[union-attr]
    assert checked.type_of(element) == T.FLOAT


def test_every_expression_of_a_translated_kernel_is_typed(tmp_path: Path) -> None:
    """The tables belong to the program they were made for: after translation, those of
    the translated program, whose nodes the source's tables never saw."""
    text = """\
        perfect void k(int n, float[n] a) {
          foreach (int i in n threads) {
            a[i] = a[i] + 1.0;
          }
        }
        """
    source = _checked(tmp_path, text)
    leaf = _checked(tmp_path, text, level="fermi")
    assert leaf.level == "fermi"
    nodes = [e for m in leaf.program.modules.values() for e in ast.walk(m)
             if isinstance(e, ast.Expr)]  # type: ignore[arg-type]
    assert nodes and all(leaf.type_of(e) is not None for e in nodes)
    names = [e for e in nodes if isinstance(e, ast.Name)]
    assert all(leaf.binding_of(e) is not None for e in names)
    assert all(source.binding_of(e) is None for e in names)  # other nodes, other tables


def test_check_source_keeps_the_tables_of_the_program_it_gives(tmp_path: Path) -> None:
    path = tmp_path / "k.mcpl"
    path.write_text("perfect void k(int n, float[n] a) {\n"
                    "  foreach (int i in n threads) {\n    a[i] = 0.0;\n  }\n}\n",
                    encoding="utf-8")
    for level in (None, "fermi"):
        found = pipeline.check_source(path, [], library(), level)
        checked = found.checked()
        assert checked is not None and checked.tables is found.tables
        assert found.program is not None
        names = [n for n in ast.walk(found.program.main) if isinstance(n, ast.Name)]
        assert names and all(checked.binding_of(n) is not None for n in names)


def test_unknown_names_have_no_binding(tmp_path: Path) -> None:
    path = tmp_path / "k.mcpl"
    path.write_text("perfect void k(int n, float[n] a) {\n"
                    "  foreach (int i in n threads) {\n    a[i] = y;\n  }\n}\n",
                    encoding="utf-8")
    found = pipeline.check_source(path, [], library())
    assert found.diagnostics and found.program is not None
    [y] = _names(found.program.main, "y")
    assert found.tables.binding_of(y) is None
    assert found.tables.type_of(y) == T.UNKNOWN


SHIPPED = sorted(Path(__file__).resolve().parents[2].glob("kernels/*/*.mcpl"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_name_and_expression_of_a_shipped_kernel_is_in_the_tables(path: Path) -> None:
    checked = pipeline.checked_at(path, [], library())
    for module in checked.program.modules.values():
        for node in ast.walk(module):
            if isinstance(node, ast.Name | ast.Call | ast.Field | ast.NamedType):
                if isinstance(node, ast.Call) and node.func in SIGNATURE_CALLS:
                    continue  # a library's access signature names no function
                bound = checked.binding_of(node)
                assert bound is not None, (node, node.span)
                name = node.func if isinstance(node, ast.Call) else node.name
                assert bound.name == name
            if isinstance(node, ast.Index | ast.Binary | ast.Name | ast.Call):
                found = checked.type_of(node)
                assert found is not None and found != T.UNKNOWN, (node, node.span)
