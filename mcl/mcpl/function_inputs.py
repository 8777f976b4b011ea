"""What the check and the analyses of one function read besides the hardware description,
as a key that is equal only where all of it is the same.

    function_inputs(program, function) -> tuple

The parse keeps every definition an edit did not touch as the very same object, with its
spans (mcl.mcpl.parse.reuse_definitions), so trees count by identity (`Ref`): the
function's, those of the functions it calls, directly or through others (the checker
reads their signatures and which parameters they write, paper section 4.3; the feedback
counts a call through the callee's costs, section 6.2), each module's top-level
constants and types. By value: each module's imports and exports, the names of every
module's definitions (a did-you-mean hint lists those in sight) and the descriptions
each module imports. The key errs on the safe side: an edit of any constant or type
changes it for every function of the program.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcl.identity import Ref
from mcl.mcpl import ast

if TYPE_CHECKING:
    from mcl.mcpl.loader import Program

__all__ = ["function_inputs", "several_functions"]


def several_functions(module: ast.Module) -> bool:
    """Does `module` define more than one function? In a file of one, every edit of
    code changes it (or a constant, which every key holds), so keeping its results by
    this key would cost each check the key and the copy and never serve a code edit."""
    return len(module.functions) > 1


def function_inputs(program: Program, function: ast.Function) -> tuple[Any, ...]:
    """The key of all `function`'s check and analyses read of `program` (module doc)."""
    modules = tuple((name, m.package, m.name, m.exports, m.imports,
                     tuple(Ref(c) for c in m.constants), tuple(Ref(t) for t in m.types),
                     tuple(f.name for f in m.functions))
                    for name, m in program.modules.items())
    hwd_imports = tuple(sorted((k, tuple(v)) for k, v in program.hwd_imports.items()))
    return modules, hwd_imports, _callees(program, function)


def _callees(program: Program, function: ast.Function) -> tuple[Any, ...]:
    """`function` and every function it calls, directly or through others, by identity;
    for each name called, what it resolves to (None: a built-in) and every function of
    that name in the program (the checker's inference of parameter modes goes by name:
    mcl.mcpl.check.infer_access)."""
    seen: dict[Ref[ast.Function], None] = {Ref(function): None}
    names: dict[tuple[Ref[ast.Function], str], Ref[ast.Function | None]] = {}
    todo = [function]
    while todo:
        f = todo.pop()
        try:
            module = program.module_of(f)
        except KeyError:  # not a definition of the program: seen from its main module
            module = program.main
        for name in sorted(_called(f)):
            found = program.visible("function", name, module)
            callee = found if isinstance(found, ast.Function) else None
            names[(Ref(f), name)] = Ref(callee)
            if callee is not None and Ref(callee) not in seen:
                seen[Ref(callee)] = None
                todo.append(callee)
    called = {name for _, name in names}
    same_names = tuple(Ref(g) for _, g in program.functions() if g.name in called)
    return tuple(seen), tuple(names.items()), same_names


def _called(function: ast.Function) -> frozenset[str]:
    """The names `function` calls (found once per node: a pure function of its tree)."""
    return ast.kept_on(function, "_called", lambda: frozenset(
        n.func for n in ast.walk(function.body) if isinstance(n, ast.Call)))
