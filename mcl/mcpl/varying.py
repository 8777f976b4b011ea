"""Which variables may differ between the units of a foreach: the indices, what the body
assigns, and what is computed from those. The barrier check (`mcl.mcpl.barriers`) and
translation's guards (`mcl.translate.guard`) both ask; it is a question about the tree
alone, so it lives with the AST and the front end never imports translation."""

from __future__ import annotations

from collections.abc import Sequence

from mcl.mcpl import ast


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
    """The variables `node` assigns, except a for loop's own control variable: a loop's
    are its body's (its own init and step change the loop variable in the same way for
    every unit; only assignments in the body make it vary), an assignment's, increment's
    or swap's the root names of its targets, any other node's its children's."""
    # Asked of each loop on each pass of the barrier check and translation, and of each
    # loop of a nest: found once per node, from its children's (`ast.kept_union`).
    return set(ast.kept_union(node, _ASSIGNED, _assigning_children, _own_targets))


_ASSIGNED = "_assigned_names"


def _assigning_children(node: object) -> list[object]:
    """The children whose assignments count for `node`'s (`assigned_names`)."""
    if isinstance(node, ast.Assign | ast.IncDec | ast.Swap):
        return []
    if isinstance(node, ast.For):
        return [node.body]
    return list(ast.children(node))


def _own_targets(node: object) -> set[str]:
    if isinstance(node, ast.Assign | ast.IncDec):
        targets = [node.target]
    elif isinstance(node, ast.Swap):
        targets = [node.left, node.right]
    else:
        return set()
    return {name for t in targets if (name := ast.root_name(t))}
