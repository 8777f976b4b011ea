"""Phrases of the feedback's texts that the facts write too (a reuse fact names the
access it is about): an expression as MCPL source, a list as a sentence. Below the facts
and the engine (docs/architecture.md, "Feedback in layers"): `mcl.feedback.emit` builds
messages with them, `mcl.feedback.facts.reuse` its notes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcl.mcpl import ast


def conjunction(items: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`: a list in a message's text."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def if_lines(lines: Sequence[int]) -> str:
    """`the if at line 12`, `the ifs at lines 12 and 30`: the `if`s a count or a bound
    could not decide."""
    if len(lines) == 1:
        return f"the if at line {lines[0]}"
    return "the ifs at lines " + conjunction([str(n) for n in lines])


def expr_text(e: Any) -> str:
    """An expression (or statement) as MCPL source, e.g. `a[i, k]`."""
    from mcl.mcpl.printer import print_expr, print_stmt

    if isinstance(e, ast.Decl):
        return print_stmt(e).strip().rstrip(";")
    try:
        return print_expr(e)
    except Exception:  # noqa: BLE001 - printing is cosmetic; never fail feedback on it
        return type(e).__name__
