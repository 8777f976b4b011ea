"""Every pass over the MCPL AST fails loudly on a node kind it was not taught.

A statement kind and an expression kind are defined here, outside `mcl.mcpl.ast`, and
planted in a kernel that is otherwise fine. Each pass must stop with `UnknownNodeError`
(from the shared traversal, `mcl.mcpl.visitor` / `ast.walk`), never skip the node and
give a result as if it were not there."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest

from mcl import pipeline
from mcl.backends import generate_module
from mcl.codegen.host_eval import HostInterpreter, evaluate
from mcl.feedback.facts.kernel import build_facts
from mcl.hdl.library import default_library
from mcl.interp import run_function
from mcl.mcpl import ast
from mcl.mcpl.check import check_program
from mcl.mcpl.checked import CheckedProgram
from mcl.mcpl.loader import Program
from mcl.mcpl.parse import parse_source
from mcl.mcpl.printer import print_expr, print_module
from mcl.mcpl.visitor import UnknownNodeError
from mcl.translate.module import translate_module

SOURCE = """\
x86_avx512 void f(int n, float[n] a) {
  int k = n / 2;
  foreach (int t in 1 threads) {
    foreach (int v in n vectors) {
      a[v] = a[v] * 2.0;
    }
  }
}
"""


@dataclass(frozen=True)
class Teleport:
    """A statement kind no pass knows."""

    target: ast.Expr
    span: ast.Span | None = None  # type: ignore[name-defined]


@dataclass(frozen=True)
class Cube:
    """An expression kind no pass knows."""

    operand: ast.Expr
    span: ast.Span | None = None  # type: ignore[name-defined]


LIBRARY = default_library()


def _module(where: str) -> ast.Module:
    """The kernel with an unknown statement in the innermost foreach (`where="stmt"`) or
    an unknown expression on the right of its assignment (`where="expr"`)."""
    module = parse_source(SOURCE, "f.mcpl")
    f = module.functions[0]
    outer = f.body.stmts[1]
    assert isinstance(outer, ast.Foreach) and isinstance(outer.body, ast.Block)
    inner = outer.body.stmts[0]
    assert isinstance(inner, ast.Foreach) and isinstance(inner.body, ast.Block)
    assign = inner.body.stmts[0]
    assert isinstance(assign, ast.Assign)
    if where == "stmt":
        stmts = (*inner.body.stmts, Teleport(ast.Name("k")))
    else:
        stmts = (replace(assign, value=Cube(assign.value)),)  # type: ignore[arg-type]
    inner = replace(inner, body=ast.Block(stmts))  # type: ignore[arg-type]
    outer = replace(outer, body=ast.Block((inner,)))
    body = ast.Block((f.body.stmts[0], outer))
    return replace(module, functions=(replace(f, body=body),))


def _program(module: ast.Module) -> Program:
    return Program(main=module, modules={"f": module})


def _interpret(module: ast.Module) -> Any:
    a = np.ones(4, np.float32)
    return run_function(pipeline.check(module, LIBRARY), "f", {"n": 4, "a": a}, LIBRARY)


def _host(module: ast.Module) -> Any:
    # Host statements stand outside every foreach; plant the strangers there.
    k = module.functions[0].body.stmts[0]
    assert isinstance(k, ast.Decl) and k.init is not None
    stmts = (replace(k, init=Cube(k.init)),) if _planted_expr(module) else (k, Teleport(k.init))
    HostInterpreter(lambda kernel, env: None).run(stmts, {"n": 4})  # type: ignore[arg-type]


def _planted_expr(module: ast.Module) -> bool:
    return any(isinstance(n, Cube) for n in _nodes(module))


def _nodes(node: object) -> list[object]:
    # Not ast.walk: that rejects the strangers, which is what the passes are tested for.
    out = [node]
    for value in vars(node).values():
        for item in value if isinstance(value, tuple) else (value,):
            if hasattr(item, "__dataclass_fields__"):
                out.extend(_nodes(item))
    return out


PASSES: dict[str, Callable[[ast.Module], Any]] = {
    "check": lambda m: check_program(_program(m), LIBRARY),
    "print": print_module,
    "interpret": _interpret,
    "translate": lambda m: translate_module(m, "x86_avx512", LIBRARY),
    # Not checked first: the checker would stop at the planted kind before codegen sees it.
    "codegen": lambda m: generate_module(CheckedProgram(_program(m)), "x86_avx512", LIBRARY),
    "host": _host,
    "feedback": lambda m: build_facts(m.functions[0], pipeline.check(_program(m), LIBRARY),
                                      LIBRARY.get("x86_avx512")),
}


@pytest.mark.parametrize("where", ["stmt", "expr"])
@pytest.mark.parametrize("name", sorted(PASSES))
def test_each_pass_rejects_an_unknown_node_kind(name: str, where: str) -> None:
    module = _module(where)
    with pytest.raises(UnknownNodeError, match="(Teleport|Cube)"):
        PASSES[name](module)


def test_the_kernel_without_strangers_passes_every_pass() -> None:
    # The same pipeline on the plain kernel works, so the errors above come from the
    # planted node kinds and nothing else.
    module = parse_source(SOURCE, "f.mcpl")
    assert not [d for d in check_program(_program(module), LIBRARY) if d.severity.name == "ERROR"]
    assert "a[v] = a[v] * 2.0;" in print_module(module)
    assert _interpret(module)["a"].tolist() == [2.0] * 4
    generate_module(pipeline.check(_program(module), LIBRARY), "x86_avx512", LIBRARY)
    assert print_expr(ast.Name("k")) == "k"
    assert evaluate(ast.Name("n"), {"n": 4}) == 4


def test_codegen_host_split_rejects_unknown_kinds() -> None:
    # Expression types are the checker's (its pass is in PASSES): code generation reads
    # them from the side tables and has no typer of its own to teach a new kind.
    from mcl.codegen.opencl import split_host

    f = parse_source(SOURCE, "f.mcpl").functions[0]
    stmts = (*f.body.stmts, Teleport(ast.Name("k")))
    planted = replace(f, body=ast.Block(stmts))  # type: ignore[arg-type]
    with pytest.raises(UnknownNodeError, match="Teleport"):
        split_host(planted)


def test_translation_walk_rejects_an_unknown_statement_kind() -> None:
    """A statement kind the foreach walk has no rule for could hold a foreach: it stops
    translation instead of being copied untranslated."""
    source = (
        "perfect void g(int n, float[n] a) {\n"
        "  foreach (int i in n threads) {\n"
        "    a[i] = 0.0;\n"
        "  }\n"
        "}\n"
    )
    module = parse_source(source, "g.mcpl")
    g = module.functions[0]
    planted = replace(g, body=ast.Block((Teleport(ast.Name("n")), *g.body.stmts)))  # type: ignore[arg-type]
    with pytest.raises(UnknownNodeError, match="Teleport"):
        translate_module(replace(module, functions=(planted,)), "gpu", LIBRARY)
    translate_module(module, "gpu", LIBRARY)  # the plain kernel translates
