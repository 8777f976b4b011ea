"""What the interpreter knows of a function beyond the checker's side tables: whether it
is a library function it computes natively."""

from __future__ import annotations

from mcl.mcpl import ast
from mcl.mcpl.builtins import SIGNATURE_CALLS


def is_library_stub(function: ast.Function) -> bool:
    """True for a library function without a real body: only `mcl_builtin_read/write`
    signature calls (or nothing at all). The interpreter computes such functions natively."""
    return all(
        isinstance(s, ast.CallStmt) and s.call.func in SIGNATURE_CALLS for s in function.body.stmts
    )
