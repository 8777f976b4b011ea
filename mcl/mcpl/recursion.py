"""Recursion is an error: OpenCL C forbids recursive functions (OpenCL C 1.2 §6.9), and a
kernel's helpers are inlined into it (paper section 6.2 counts them through their callers),
which a cycle of calls would make endless."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcl.diagnostics import Diagnostic, error
from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.environment import resolve_callee

if TYPE_CHECKING:
    from mcl.mcpl.loader import Program


def recursion_errors(program: Program) -> list[Diagnostic]:
    """One error per function that can call itself, at its first call that leads back."""
    calls: dict[Ref[ast.Function], list[tuple[ast.Call, ast.Function]]] = {}
    functions: list[ast.Function] = []
    for module in program.modules.values():
        for f in module.functions:
            functions.append(f)
            out = calls.setdefault(Ref(f), [])
            for node in ast.walk(f.body):
                if isinstance(node, ast.Call):
                    callee = resolve_callee(program, module, node.func)
                    if isinstance(callee, ast.Function):
                        out.append((node, callee))
    diags = []
    for f in functions:
        for call, callee in calls[Ref(f)]:
            path = _path(callee, f, calls)
            if path is not None:
                through = "" if not path[:-1] else " through " + ", ".join(
                    f"'{g.name}'" for g in path[:-1])
                diags.append(error(
                    "mcpl-recursion",
                    f"'{f.name}' calls itself{through}: OpenCL C does not allow recursion",
                    call.span or f.span,
                    "write the recursion as a loop",
                ))
                break
    return diags


def _path(start: ast.Function, goal: ast.Function,
          calls: dict[Ref[ast.Function], list[tuple[ast.Call, ast.Function]]]
          ) -> list[ast.Function] | None:
    """Functions from `start` to `goal` along calls (both included), or None."""
    previous: dict[Ref[ast.Function], ast.Function | None] = {Ref(start): None}
    queue = [start]
    while queue:
        current = queue.pop(0)
        if current is goal:
            path = [current]
            while (before := previous[Ref(path[-1])]) is not None:
                path.append(before)
            return path[::-1]
        for _, callee in calls.get(Ref(current), []):
            if Ref(callee) not in previous:
                previous[Ref(callee)] = current
                queue.append(callee)
    return None
