"""Which variables may differ between the units of a foreach: the indices, what the body
assigns, and what is computed from those. The barrier check (`mcl.mcpl.barriers`) and
translation's guards (`mcl.translate.guard`) both ask; it is a question about the tree
alone, so it lives with the AST and the front end never imports translation."""

from __future__ import annotations

from collections.abc import Sequence

from mcl.mcpl import ast
from mcl.mcpl.visitor import NodeVisitor


def names_in(node: object) -> set[str]:
    """Every identifier a node declares or mentions (variables, parameters, foreach and for
    indices, views, called functions)."""
    # asked of the same loop headers and initialisers at every statement of the flow
    # analyses: found once per node
    return set(ast.kept_on(node, "_names_in", lambda: frozenset(_names_in(node))))


def _names_in(node: object) -> set[str]:
    found: set[str] = set()
    for n in ast.walk(node):
        match n:
            case ast.Name() | ast.Decl() | ast.Param() | ast.View():
                found.add(n.name)
            case ast.Foreach():
                found.add(n.var)
            case ast.ViewDecl():
                found.add(n.source)
            case ast.Call():
                found.add(n.func)
    return found


def varying_names(stmts: Sequence[ast.Stmt], seeds: set[str]) -> set[str]:
    """Names whose value may differ between the units of a group: the seeds, everything
    assigned in the body (a loop's own control variable excepted), and everything
    initialised from a varying name."""
    varying = set(seeds)
    for s in stmts:
        varying |= assigned_names(s)
    changed = True
    while changed:  # fixpoint: declarations and loops can feed each other in any order
        changed = False
        for node in (n for s in stmts for n in ast.walk(s)):
            name, reads = _binding(node)
            if name is not None and name not in varying and reads & varying:
                varying.add(name)
                changed = True
    return varying


def _binding(node: object) -> tuple[str | None, set[str]]:
    """The name a statement binds and the names its value is computed from."""
    if isinstance(node, ast.Decl) and node.init is not None:
        return node.name, names_in(node.init)
    if isinstance(node, ast.For):
        return node.var, header_names(node) - {node.var}
    return None, set()


def header_names(loop: ast.For) -> set[str]:
    """The names a for loop's header reads (init, condition, step)."""
    init_value = loop.init.init if isinstance(loop.init, ast.Decl) else loop.init.value
    step = loop.step
    names = names_in(loop.cond) | names_in(step.target)
    if init_value is not None:
        names |= names_in(init_value)
    if isinstance(step, ast.Assign):
        names |= names_in(step.value)
    return names


def assigned_names(node: object) -> set[str]:
    """The variables `node` assigns, except a for loop's own control variable."""
    # (the barrier check asks it of each loop on each of its passes: found once per node)
    return set(ast.kept_on(node, "_assigned_names", lambda: frozenset(_assigned(node))))


def _assigned(node: object) -> set[str]:
    found = _AssignedNames()
    found.visit(node)
    return found.names


class _AssignedNames(NodeVisitor):
    """The variables a statement assigns, except a for loop's own control variable."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_For(self, node: ast.For) -> None:
        # The loop's own init and step change the loop variable in the same way for every
        # unit; only assignments in the body make it vary.
        self.visit(node.body)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._add(ast.root_name(node.target))

    def visit_IncDec(self, node: ast.IncDec) -> None:
        self._add(ast.root_name(node.target))

    def visit_Swap(self, node: ast.Swap) -> None:
        self._add(ast.root_name(node.left))
        self._add(ast.root_name(node.right))

    def _add(self, name: str | None) -> None:
        if name:
            self.names.add(name)
