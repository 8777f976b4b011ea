"""Which array expressions the analyses can follow (paper 6.4: "Array expressions are
unpredictable if an array expression contains non-loop variables that are written or
originating from arrays"), and the loops that count for an access: those inside the
declaration of its variable. The cache and irregular analyses share both rules.
"""

from __future__ import annotations

from mcl.feedback.facts.kernel import Access, DeclaredName, KernelFacts, Loop, Scope
from mcl.mcpl import ast


def unpredictable_reasons(facts: KernelFacts, expr: ast.Expr, scope: Scope,
                          seen: frozenset[DeclaredName] = frozenset()) -> list[str]:
    """Section 6.4: "Array expressions are unpredictable if an array expression contains
    non-loop variables that are written or originating from arrays"."""
    reasons: list[str] = []
    for node in ast.walk(expr):
        match node:
            case ast.Index():
                reasons.append(f"it depends on the values of array {ast.root_name(node)}")
            case ast.Call() if node.func not in ("min", "max", "abs"):
                reasons.append(f"it depends on the result of {node.func}()")
            case ast.Name():
                b = scope.lookup(node)
                if b is None or b in seen:
                    continue
                if b.kind == "loop":
                    shape = facts.evaluator.shape(b.loop) if b.loop is not None else None
                    if shape is not None and not shape.affine:
                        reasons.append(shape.reason or f"loop variable {b.name} does not advance "
                                       "by a fixed step")
                elif b.single_assignment and b.scope is not None and b.init is not None:
                    reasons += unpredictable_reasons(facts, b.init, b.scope, seen | {b})
                elif b.kind in ("local", "constant") and not b.is_array:
                    reasons.append(f"it depends on {b.name}, which is written in the kernel")
    return list(dict.fromkeys(reasons))


def loops_since_declaration(access: Access) -> list[Loop]:
    """The loops around an access that lie inside the declaration of its variable (paper
    6.4: "the surrounding loops taking into account where the variable was last
    defined")."""
    declared = access.binding.root.loops
    return [loop for loop in access.item.loops if loop not in declared]
