"""What the refinements ask of a function's tree: which names a statement writes or
declares, the block that holds a statement, the statements around a node, the value of
a constant expression. One place for these, so each refinement states its
preconditions in the same terms."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from mcl.codegen.host_eval import Number, evaluate
from mcl.diagnostics import MclError
from mcl.mcpl import ast
from mcl.mcpl.access import written_names
from mcl.tune.space import constant_values


def written(node: object) -> set[str]:
    """The variables `node` assigns, increments, swaps or declares anywhere below it,
    loop variables included; a variable passed to a call counts as written (the callee
    may write it: atomicAdd does), as the checker counts writes (written_names)."""
    names = set(written_names(node))
    for n in ast.walk(node):
        match n:
            case ast.Decl(name=name):
                names.add(name)
            case ast.Foreach(var=var):
                names.add(var)
            case ast.ViewDecl(source=source, view=view):
                names |= {source, view.name}
            case _:
                pass
    return names


def names_in(node: object) -> set[str]:
    """Every name read in `node`."""
    return {n.name for n in ast.walk(node) if isinstance(n, ast.Name)}


def every_name(function: ast.Function) -> set[str]:
    """Every name the function reads or declares, and its parameters' names: a new
    local must differ from all of them."""
    return names_in(function) | written(function) | {p.name for p in function.params}


def fresh_name(base: str, taken: set[str]) -> str:
    """`base`, or `base_2`, `base_3`, ... whichever is not taken."""
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name


def fresh_names(bases: Iterable[str], taken: set[str]) -> list[str]:
    """`fresh_name` of each of `bases`, none taken and no two the same."""
    picked: list[str] = []
    for base in bases:
        picked.append(fresh_name(base, taken | set(picked)))
    return picked


def holding_block(function: ast.Function, stmt: object) -> ast.Block | None:
    """The block whose statements include `stmt` (by identity); None where `stmt` is
    the body of an if, a loop without braces, or not in the function."""
    for n in ast.walk(function.body):
        if isinstance(n, ast.Block) and any(s is stmt for s in n.stmts):
            return n
    return None


def path_to(root: object, node: object) -> list[object]:
    """The nodes from `root` down to `node` (both included); empty where it is not
    below `root`."""
    for child in ast.children(root):
        found = path_to(child, node)
        if found:
            return [root, *found]
    return [root] if root is node else []


def constant_env(module: ast.Module) -> dict[str, Number]:
    """The values of the module's named constants (tune's reading of them)."""
    return constant_values(module.constants, {})


def constant_int(e: ast.Expr, env: Mapping[str, Number]) -> int | None:
    """The integer value of `e` from the named constants alone; None where it depends
    on anything else."""
    try:
        value = evaluate(e, dict(env))
    except (MclError, ArithmeticError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
