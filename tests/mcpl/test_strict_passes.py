"""Every strict pass has a rule for every node kind it can receive.

A strict pass is a `StrictVisitor` (one `visit_<Class>` method per kind) or a function
that dispatches with an exhaustive `match` whose last arm is `unknown_node`. Which kinds
a pass can receive follows from the AST's unions (`ast.Type`, `ast.Expr`, `ast.Stmt`): a
pass with a rule for one statement kind receives statements, so it needs a rule for
every statement kind. A kind added to a union without teaching a pass fails here, for
every pass at once, before any kernel reaches the pass (tests/test_unknown_node_kinds.py
checks the run-time side: a class outside `NODE_CLASSES` stops each pass)."""

from __future__ import annotations

import ast as python_ast
import importlib
import inspect
import pkgutil
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, get_args, get_type_hints

import pytest

import mcl
from mcl.mcpl import ast
from mcl.mcpl.visitor import StrictVisitor, UnknownNodeError, unknown_node

ROOT = Path(mcl.__file__).resolve().parent

UNIONS: dict[str, frozenset[str]] = {
    name: frozenset(cls.__name__ for cls in get_args(union))
    for name, union in (("Type", ast.Type), ("Expr", ast.Expr), ("Stmt", ast.Stmt))
}

# Strict visitors that receive only part of a union, by design, and the kinds they leave
# to `generic_visit` (which raises or reports them). Exactly these kinds: a new kind in
# the union is a decision to make here, not a silent gap.
PARTIAL: dict[str, dict[str, frozenset[str]]] = {
    # Called only on the statements that hold a barrier (translate/guard.py `_guard`).
    "mcl.translate.guard._BarrierKeeper": {
        "Stmt": frozenset({"Assign", "CallStmt", "Decl", "IncDec", "Return", "Swap",
                           "ViewDecl"}),
    },
    # Host code computes scalars (its expressions through the language's one evaluator,
    # mcl/mcpl/evaluate.py): a device statement is reported as `codegen-host-stmt`.
    "mcl.codegen.host_eval.HostInterpreter": {
        "Stmt": frozenset({"Barrier", "CallStmt", "Foreach", "Return", "Swap", "ViewDecl"}),
    },
}

# The passes converted to exhaustive matches: the search below must find them, so it
# cannot pass by finding nothing.
KNOWN_MATCHES = {
    "mcl/feedback/facts/kernel.py:_Builder.stmt",
    "mcl/feedback/facts/kernel.py:_Builder.expr",
    "mcl/mcpl/barriers.py:_visit",
    "mcl/mcpl/barriers.py:_Walker.stmt",
    "mcl/mcpl/check_function.py:FunctionChecker.executing",
    "mcl/mcpl/divergence.py:_DivergentNames.stmt",
    "mcl/mcpl/divergence.py:_Barriers.stmt",
    "mcl/mcpl/divergence.py:_Races.single",
    "mcl/mcpl/uninitialised.py:_Walk.stmt",
    "mcl/feedback/facts/symbolic.py:SymbolicEvaluator.deps",
    "mcl/translate/spaces.py:_declarations_in",
    "mcl/lsp/lookup.py:_in_stmt",
    "mcl/mcpl/extents.py:_Search.block",
    "mcl/codegen/host_cpp.py:FunctionWriter.stmt",
    "mcl/codegen/lanes.py:LaneEmitter._p",
    "mcl/codegen/lanes.py:LaneEmitter.stmt",
    "mcl/codegen/statements.py:BodyEmitter.guarded_barrier_stmt",
    "mcl/lsp/references.py:name_span_of_use",
    "mcl/lsp/references.py:_binding_at",
    "mcl/lsp/navigation.py:_definition_at",
    "mcl/lsp/hover.py:_node_text",
}


def _import_all() -> None:
    for info in pkgutil.walk_packages(mcl.__path__, "mcl."):
        if info.name != "mcl.__main__":
            importlib.import_module(info.name)


def _strict_visitors() -> list[type[StrictVisitor]]:
    _import_all()
    out: list[type[StrictVisitor]] = []
    todo = [StrictVisitor]
    while todo:
        for sub in todo.pop().__subclasses__():
            out.append(sub)
            todo.append(sub)
    return sorted({c for c in out if c.__module__.startswith("mcl.")},
                  key=lambda c: f"{c.__module__}.{c.__qualname__}")


def _missing(handled: set[str]) -> dict[str, frozenset[str]]:
    """The kinds of each union the pass receives (it handles one of them) and lacks."""
    return {name: members - handled for name, members in UNIONS.items()
            if members & handled and members - handled}


def test_every_strict_visitor_has_a_rule_for_each_kind_it_receives() -> None:
    visitors = _strict_visitors()
    assert len(visitors) >= 10  # the checker, printer, interpreter, code generation, ...
    gaps = {}
    for cls in visitors:
        handled = {name.removeprefix("visit_") for name in dir(cls) if name.startswith("visit_")}
        missing = _missing(handled)
        if missing:
            gaps[f"{cls.__module__}.{cls.__qualname__}"] = missing
    assert gaps == PARTIAL


def _class_names(pattern: python_ast.pattern) -> Iterator[str]:
    if isinstance(pattern, python_ast.MatchClass):
        cls = pattern.cls
        yield cls.attr if isinstance(cls, python_ast.Attribute) else getattr(cls, "id", "")
    elif isinstance(pattern, python_ast.MatchOr):
        for p in pattern.patterns:
            yield from _class_names(p)
    elif isinstance(pattern, python_ast.MatchAs) and pattern.pattern is not None:
        yield from _class_names(pattern.pattern)


def _ends_in_unknown_node(match: python_ast.Match) -> bool:
    last = match.cases[-1]
    return (isinstance(last.pattern, python_ast.MatchAs) and last.pattern.pattern is None
            and any(isinstance(n, python_ast.Call) and isinstance(n.func, python_ast.Name)
                    and n.func.id == "unknown_node" for n in python_ast.walk(last)))


def _strict_match_owners(source: str) -> list[str]:
    """Qualified names of the functions in `source` that hold an exhaustive match."""
    out: list[str] = []

    def visit(node: python_ast.AST, owner: str) -> None:
        for child in python_ast.iter_child_nodes(node):
            if isinstance(child, python_ast.ClassDef | python_ast.FunctionDef):
                visit(child, f"{owner}.{child.name}" if owner else child.name)
            elif isinstance(child, python_ast.Match) and _ends_in_unknown_node(child):
                out.append(owner)
            else:
                visit(child, owner)

    visit(python_ast.parse(source), "")
    return out


def _kinds(annotation: object) -> set[str]:
    """The node classes a parameter's annotation admits (None dropped)."""
    args = get_args(annotation)
    if args:
        return set().union(*(_kinds(a) for a in args))
    return {annotation.__name__} if annotation in ast.NODE_CLASSES else set()


def gaps_of(function: Callable[..., object]) -> set[str]:
    """The kinds the subject of `function`'s exhaustive match may be (by its annotation)
    that have no arm."""
    tree = python_ast.parse(textwrap.dedent(inspect.getsource(function)))
    (match,) = [n for n in python_ast.walk(tree)
                if isinstance(n, python_ast.Match) and _ends_in_unknown_node(n)]
    assert isinstance(match.subject, python_ast.Name), "match on a parameter"
    receivable = _kinds(get_type_hints(function)[match.subject.id])
    assert receivable, f"{function.__qualname__}: its subject's annotation names no node kind"
    arms = {name for case in match.cases for name in _class_names(case.pattern)}
    return receivable - arms


def _all_strict_matches() -> dict[str, Callable[..., object]]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        if path.name == "__main__.py":
            continue
        prefix = path.relative_to(ROOT.parent).as_posix()
        owners = _strict_match_owners(path.read_text(encoding="utf-8"))
        if owners:
            module = importlib.import_module(prefix.removesuffix(".py").replace("/", "."))
            for owner in owners:
                obj: Any = module
                for part in owner.split("."):
                    obj = getattr(obj, part)
                out[f"{prefix}:{owner}"] = obj
    return out


def test_every_strict_match_has_an_arm_for_each_kind_it_receives() -> None:
    matches = _all_strict_matches()
    assert KNOWN_MATCHES <= set(matches)
    gaps = {name: missing for name, f in matches.items() if (missing := gaps_of(f))}
    assert gaps == {}


def _forgetful(s: ast.Stmt) -> None:
    match s:
        case ast.Block() | ast.Decl() | ast.ViewDecl() | ast.Assign() | ast.IncDec():
            pass
        case ast.CallStmt() | ast.Swap() | ast.If() | ast.For() | ast.Foreach():
            pass
        case ast.Return():
            pass
        case _:
            unknown_node(s, "f")  # type: ignore[arg-type]  # Barrier is left out on purpose


def _barrier_or_return(s: ast.Barrier | ast.Return | None) -> None:
    match s:
        case None | ast.Barrier() | ast.Return():
            pass
        case _:
            unknown_node(s, "f")


def test_a_match_that_forgets_a_kind_is_found() -> None:
    # The check above can fail: a statement match without a Barrier arm is a gap; a match
    # over a narrower union needs arms for that union only.
    assert gaps_of(_forgetful) == {"Barrier"}
    assert gaps_of(_barrier_or_return) == set()
    assert set(_strict_match_owners(inspect.getsource(sys.modules[__name__]))) >= {
        "_forgetful", "_barrier_or_return"}


def test_unknown_node_rejects_a_stranger_and_names_the_pass() -> None:
    class Teleport:
        pass

    with pytest.raises(UnknownNodeError, match="Teleport is not an MCPL AST node kind"):
        unknown_node(Teleport(), "the probe")  # type: ignore[arg-type]
    with pytest.raises(UnknownNodeError, match="the probe has no rule for Barrier nodes"):
        unknown_node(ast.Barrier("local"), "the probe")  # type: ignore[arg-type]
