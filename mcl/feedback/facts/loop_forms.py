"""The forms of a for-loop's header the analyses recognise: its condition with the loop
variable on the left (`k < b`) and its step as an addition, a multiplication or a
division by a constant (`k++`, `k *= 2`, `s >>= 1`). Pure functions of the syntax tree:
the symbolic evaluator (mcl.feedback.facts.symbolic) counts trips with them, and the
checks of the user's values (mcl.feedback.value_checks) and of irregular loops use them
without importing SymPy."""

from __future__ import annotations

from mcl.mcpl import ast

# A comparison with its sides swapped: `b > k` is `k < b`.
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "!=": "!="}


def loop_condition(cond: ast.Expr, var: str) -> tuple[str, ast.Expr] | None:
    """`k < b`, `b > k`, ... as (op, b) with the loop variable on the left."""
    if not isinstance(cond, ast.Binary) or cond.op not in _FLIP:
        return None
    if isinstance(cond.left, ast.Name) and cond.left.name == var:
        return cond.op, cond.right
    if isinstance(cond.right, ast.Name) and cond.right.name == var:
        return _FLIP[cond.op], cond.left
    return None


def loop_step(step: ast.Stmt, var: str) -> tuple[str, ast.Expr] | None:
    """The step as ("add", c) for `k++`, `k += c`, `k = k + c`, ... or ("mul", c)."""
    if isinstance(step, ast.IncDec) and _is_var(step.target, var):
        return "add", ast.IntLit(1 if step.op == "++" else -1)
    if not isinstance(step, ast.Assign) or not _is_var(step.target, var):
        return None
    if step.op == "+=":
        return "add", step.value
    if step.op == "-=":
        return "add", ast.Unary("-", step.value)
    if step.op == "*=":
        return "mul", step.value
    if step.op == "<<=":
        return "mul", ast.Binary("<<", ast.IntLit(1), step.value)
    if step.op in ("/=", ">>="):  # a tree reduction's `s >>= 1`, `s /= 2`
        return "div", (step.value if step.op == "/=" else
                       ast.Binary("<<", ast.IntLit(1), step.value))
    if step.op == "=" and isinstance(step.value, ast.Binary):
        v = step.value
        if v.op in ("+", "*") and _is_var(v.right, var):
            v = ast.Binary(v.op, v.right, v.left)
        if _is_var(v.left, var):
            if v.op == "+":
                return "add", v.right
            if v.op == "-":
                return "add", ast.Unary("-", v.right)
            if v.op == "*":
                return "mul", v.right
            if v.op in ("/", ">>"):
                return "div", (v.right if v.op == "/" else
                               ast.Binary("<<", ast.IntLit(1), v.right))
    return None


def _is_var(e: ast.Expr, var: str) -> bool:
    return isinstance(e, ast.Name) and e.name == var
