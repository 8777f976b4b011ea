"""Code generation reads the checker's types (docs/architecture.md, "The checker's side
tables"): those of the `CheckedProgram` it is given, which follow its own rewrite of the
tree (description constants folded) and record the nodes it builds, with no second check
and no typer of its own."""

from __future__ import annotations

import typing
from dataclasses import replace
from pathlib import Path

import pytest

from mcl import pipeline
from mcl.codegen.opencl import codegen_input
from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl import types as T
from mcl.mcpl.checked import CheckedProgram
from mcl.mcpl.sidetables import SideTables
from mcl.resources import kernels_dir

from .support import library, load

KERNEL = kernels_dir() / "matmul" / "hopper_v2.mcpl"
# Description constants in expressions, which code generation folds into literals.
FOLDED = """
x86_avx512 void scale(int n, main float[n] x) {
  foreach (int t in n / 16 threads) {
    foreach (int v in 16 vectors) {
      x[t * 16 + v] = x[t * 16 + v]
                      * (x86_avx512.hierarchy.threads.thread.vectors.max_nr_units + 0.5);
    }
  }
}
"""
EXPRS = typing.get_args(ast.Expr)


def _checked() -> CheckedProgram:
    return pipeline.checked_at(KERNEL, (), library())


def test_every_expression_code_generation_prints_has_the_checkers_type(
        tmp_path: Path) -> None:
    for checked, leaf in ((_checked(), "hopper"), (load(tmp_path, FOLDED), "x86_avx512")):
        source = codegen_input(checked, leaf, library())
        exprs = [e for e in ast.walk(source.module) if isinstance(e, EXPRS)]
        assert exprs and all(Ref(e) in source.tables.types for e in exprs)
    # The folded description constant and the expressions around it are new nodes: the
    # side tables followed the rewrite to them.
    folded = [e for e in exprs if Ref(e) not in checked.tables.types]
    assert {type(e) for e in folded} >= {ast.IntLit, ast.Binary}


def test_code_generation_reads_the_checkers_type_of_an_operand() -> None:
    checked = _checked()
    kernel = checked.main.function("matmul")
    assert kernel is not None
    remainder = next(e for e in ast.walk(kernel) if isinstance(e, ast.Binary)
                     and e.op == "%" and isinstance(e.left, ast.Name) and e.left.name == "tid")
    plain = pipeline.generate(checked, "hopper", library()).source
    assert "fmod(" not in plain
    # The same tree with the checker saying `tid` is a float: the remainder is fmod.
    tables = SideTables(dict(checked.tables.types), checked.tables.bindings,
                        checked.tables.declared)
    tables.record_type(remainder.left, T.FLOAT)
    told = pipeline.generate(replace(checked, tables=tables), "hopper", library()).source
    assert "fmod(tid, THREADS_J)" in told


def test_a_checked_program_at_the_leaf_is_not_checked_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    checked = _checked()

    def again(*args: object, **kwargs: object) -> None:
        raise AssertionError("code generation checked the program again")

    monkeypatch.setattr(pipeline, "check_program", again)
    assert pipeline.generate(checked, "hopper", library()).functions


def test_a_node_built_without_its_type_is_an_error_not_typed_again() -> None:
    """Code generation has no typer: a node it built untyped is its own mistake."""
    from mcl.codegen.scope import CScope
    from mcl.diagnostics import MclError

    scope = CScope({}, {}, SideTables())
    with pytest.raises(MclError) as exc:
        scope.type_of(ast.Binary("+", ast.IntLit(1), ast.IntLit(2)))
    assert exc.value.diagnostics[0].code == "codegen-untyped"


def test_launch_sizes_are_typed_when_built() -> None:
    """The NDRange arithmetic code generation writes (rounded-up group counts) is in the
    side tables it hands to the host harness, typed by the checker's rules."""
    checked = pipeline.checked_at(kernels_dir() / "vectoradd" / "perfect.mcpl", (),
                                  library(), "hopper")
    generated = pipeline.generate(checked, "hopper", library())
    sizes = [e for f in generated.functions for k in f.kernels
             for e in (*k.groups, *k.local)]
    assert sizes and all(generated.tables.type_of(e) == T.INT for e in sizes)
