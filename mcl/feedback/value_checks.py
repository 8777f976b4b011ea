"""Values that make a kernel meaningless are reported before any analysis runs.

`-D chunk=0` turns `n / chunk` into a division by zero and `foreach (... in chunk ...)`
into a loop over no units; the analyses would otherwise carry SymPy's `zoo` and `nan`
into their figures ("zoo stores") or fail on them. The checker already rejects such
constants in the source (`mcl.mcpl.constfold`); this applies the same folding with the
user's values for the parameters.
"""

from __future__ import annotations

from collections.abc import Mapping

from mcl.defines import type_problem
from mcl.diagnostics import Diagnostic, error
from mcl.feedback.facts.loop_forms import loop_condition, loop_step
from mcl.mcpl import ast
from mcl.mcpl.constfold import Constant, FoldError, fold
from mcl.mcpl.extents import extent_errors
from mcl.mcpl.printer import print_expr, print_stmt


def value_errors(function: ast.Function, values: Mapping[str, Constant]) -> list[Diagnostic]:
    """Divisions by zero, foreach counts below 1 and accesses outside an array that the
    values of `function`'s parameters cause, each located at the expression."""
    params = {p.name for p in function.params}
    known = {k: v for k, v in values.items() if k in params}
    if not known:
        return []
    diags = _type_errors(function, known)
    if diags:  # folding with a value its parameter cannot hold would mislead
        return diags
    for node in ast.walk(function):
        match node:
            case ast.Binary(op="/" | "%"):
                divisor = _value(node.right, known)
                if divisor == 0 and isinstance(divisor, int):
                    diags.append(error(
                        "values-division-by-zero",
                        f"with {_shown(node.right, known)}, '{print_expr(node.right)}' is 0 and "
                        f"'{print_expr(node)}' divides by zero",
                        node.right.span or node.span,
                        "give the parameters values the kernel is meant for",
                    ))
            case ast.Foreach():
                count = _value(node.count, known)
                if count is not None and count < 1:
                    diags.append(error(
                        "values-empty-foreach",
                        f"with {_shown(node.count, known)}, the count '{print_expr(node.count)}'"
                        " of this foreach is "
                        f"{count}: it runs no units",
                        node.count.span or node.span,
                        "a foreach count must be at least 1",
                    ))
            case ast.For():
                diags += _endless_loop(node, known)
    return diags + extent_errors(function, known)


def _endless_loop(loop: ast.For, values: Mapping[str, Constant]) -> list[Diagnostic]:
    """A multiplying loop (`k *= 2`, `k <<= 1`) whose start the values make 0, or
    negative under `k < b`: the variable never grows, so the loop does not end where its
    condition holds. The trip count ceiling(log_f(b / start)) of the analyses holds only
    for a start above 0 (integer parameters are sizes, taken to be positive)."""
    init = loop.init.init if isinstance(loop.init, ast.Decl) else loop.init.value
    step, cond = loop_step(loop.step, loop.var), loop_condition(loop.cond, loop.var)
    if init is None or step is None or step[0] != "mul" or not _shown(init, values):
        return []
    start, factor = _value(init, values), _value(step[1], values)
    if not isinstance(start, int):
        return []
    if start == 0:
        why = "leaves it there"
    elif start < 0 and isinstance(factor, int) and factor > 1 and cond is not None \
            and cond[0] in ("<", "<="):
        why = "only makes it smaller"
    else:
        return []
    return [error(
        "values-endless-loop",
        f"with {_shown(init, values)}, '{loop.var}' starts at {start} and "
        f"'{print_stmt(loop.step).rstrip(';')}' {why}: the loop does not end for a unit where "
        f"'{print_expr(loop.cond)}' holds",
        init.span or loop.span,
        "a loop that multiplies its variable needs a start above 0",
    )]


def _type_errors(function: ast.Function, values: Mapping[str, Constant]) -> list[Diagnostic]:
    """A value that its parameter's type cannot hold: `-D n=2048.5` for `int n` would give
    fractional counts, and `-D n=1e40` is no int at all (mcl.defines.type_problem)."""
    diags = []
    for param in function.params:
        if param.name in values and isinstance(param.type, ast.Prim):
            value = values[param.name]
            why = type_problem(value, param.type.name)
            if why is not None:
                diags.append(error(
                    "values-type",
                    f"-D {param.name}={value}: '{param.name}' is {_article(param.type.name)}"
                    f" {param.type.name} parameter, and {value} is {why}",
                    param.span, f"give '{param.name}' a value its type can hold"))
    return diags


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _shown(e: ast.Expr, values: Mapping[str, Constant]) -> str:
    used = sorted({n.name for n in ast.walk(e) if isinstance(n, ast.Name) and n.name in values})
    return ", ".join(f"{name} = {values[name]}" for name in used)


def _value(e: ast.Expr, values: Mapping[str, Constant]) -> Constant | None:
    try:
        return fold(e, values.get)
    except (FoldError, RecursionError):
        return None
