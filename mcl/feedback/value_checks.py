"""Values that make a kernel meaningless are reported before any analysis runs.

`-D chunk=0` turns `n / chunk` into a division by zero and `foreach (... in chunk ...)`
into a loop over no units; the analyses would otherwise carry SymPy's `zoo` and `nan`
into their figures ("zoo stores") or fail on them. The checker already rejects such
constants in the source (`mcl.mcpl.constfold`); this applies the same folding with the
user's values for the parameters.
"""

from __future__ import annotations

from collections.abc import Mapping

from mcl.diagnostics import Diagnostic, error
from mcl.mcpl import ast
from mcl.mcpl.constfold import Constant, FoldError, fold_binary, fold_unary
from mcl.mcpl.extents import extent_errors
from mcl.mcpl.printer import print_expr


def value_errors(function: ast.Function, values: Mapping[str, Constant]) -> list[Diagnostic]:
    """Divisions by zero, foreach counts below 1 and accesses outside an array that the
    values of `function`'s parameters cause, each located at the expression."""
    params = {p.name for p in function.params}
    known = {k: v for k, v in values.items() if k in params}
    if not known:
        return []
    diags: list[Diagnostic] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Binary) and node.op in ("/", "%"):
            divisor = _value(node.right, known)
            if divisor == 0 and isinstance(divisor, int):
                diags.append(error(
                    "values-division-by-zero",
                    f"with {_shown(node.right, known)}, '{print_expr(node.right)}' is 0 and "
                    f"'{print_expr(node)}' divides by zero",
                    node.right.span or node.span,
                    "give the parameters values the kernel is meant for",
                ))
        elif isinstance(node, ast.Foreach):
            count = _value(node.count, known)
            if count is not None and count < 1:
                diags.append(error(
                    "values-empty-foreach",
                    f"with {_shown(node.count, known)}, the count '{print_expr(node.count)}' of this foreach is "
                    f"{count}: it runs no units",
                    node.count.span or node.span,
                    "a foreach count must be at least 1",
                ))
    return diags + extent_errors(function, known)


def _shown(e: ast.Expr, values: Mapping[str, Constant]) -> str:
    used = sorted({n.name for n in ast.walk(e) if isinstance(n, ast.Name) and n.name in values})
    return ", ".join(f"{name} = {values[name]}" for name in used)


def _value(e: ast.Expr, values: Mapping[str, Constant]) -> Constant | None:
    try:
        return _fold(e, values)
    except (FoldError, RecursionError):
        return None


def _fold(e: ast.Expr, values: Mapping[str, Constant]) -> Constant | None:
    if isinstance(e, (ast.IntLit, ast.FloatLit)):
        return e.value
    if isinstance(e, ast.Name):
        return values.get(e.name)
    if isinstance(e, ast.Unary):
        return fold_unary(e.op, _fold(e.operand, values))
    if isinstance(e, ast.Binary):
        return fold_binary(e.op, _fold(e.left, values), _fold(e.right, values))
    return None
