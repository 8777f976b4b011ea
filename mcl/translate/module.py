"""Appendix A.1: translate the functions of a module to a target level, step by step.

TRANSLATEFUNCTIONS finds the path perfect → … → target; TRANSLATEFUNCTION moves every
function whose level lies on that path down one edge at a time; TRANSLATE does one step
in the paper's three phases: equivalent par_groups (A.2, `mcl.hdl.equivalence`), memory
spaces of declarations and barriers (A.3, `spaces.py`), foreach statements (A.4,
`foreach.py`).

Functions on other branches are left alone with a note; a function below the target
(upward) is an error, and so is a module none of whose functions can reach the target.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from mcl.diagnostics import Diagnostic, MclError, Severity
from mcl.hdl.equivalence import find_equivalent_par_groups
from mcl.mcpl import ast
from mcl.mcpl.loader import Program
from mcl.mcpl.varying import names_in
from mcl.translate.counts import StaticInts, host_constants
from mcl.translate.foreach import translate_foreach_stmts
from mcl.translate.levels import (
    Library,
    arrow,
    lineage,
    require_level,
    sideways_error,
    upward_error,
)
from mcl.translate.naming import NameSupply
from mcl.translate.spaces import translate_spaces
from mcl.translate.step import Step


@dataclass(frozen=True)
class TranslationResult:
    """The translated module, notes about functions left alone, and (from
    `translate_program`) the whole program with the translated module in it."""

    module: ast.Module
    notes: tuple[Diagnostic, ...] = ()
    program: Program | None = None


def translate_module(module: ast.Module, target: str, library: Library) -> TranslationResult:
    """TRANSLATEFUNCTIONS: every function of `module` whose level lies on the path from
    `perfect` to `target` is translated to `target`. Never mutates `module`."""
    require_level(library, target)
    path = lineage(library, target)
    notes: list[Diagnostic] = []
    errors: list[MclError] = []
    sideways: list[MclError] = []
    reachable = False
    functions: list[ast.Function] = []
    translator = _Translator(module, library)
    for f in module.functions:
        require_level(library, f.hwd, f.span, what="hardware description")
        if f.hwd in path:
            reachable = True
            functions.append(translator.function(f, path[path.index(f.hwd):]))
        elif target in lineage(library, f.hwd):
            errors.append(upward_error(library, f.name, f.hwd, target, f.span))
            functions.append(f)
        else:
            sideways.append(sideways_error(library, f.name, f.hwd, target, f.span))
            notes.append(
                Diagnostic(
                    Severity.NOTE,
                    "translate-other-branch",
                    f"function '{f.name}' is written for {f.hwd}, which is not on the path "
                    f"{arrow(path)}; left unchanged",
                    f.span,
                )
            )
            functions.append(f)
    if not reachable:
        errors += sideways
    if errors:
        raise MclError([d for e in errors for d in e.diagnostics])
    translated = replace(module, functions=tuple(functions))
    return TranslationResult(_with_imports(translated, module, path, library), tuple(notes))


def translate_function(
    function: ast.Function, target: str, library: Library, module: ast.Module | None = None
) -> ast.Function:
    """TRANSLATEFUNCTION for one function (its module gives the names to avoid and the
    integer constants; a module holding just this function is assumed when None)."""
    require_level(library, target)
    module = module or ast.Module(None, None, None, (), (), (), (function,))
    path = lineage(library, target)
    require_level(library, function.hwd, function.span, what="hardware description")
    if function.hwd not in path:
        if target in lineage(library, function.hwd):
            raise upward_error(library, function.name, function.hwd, target, function.span)
        raise sideways_error(library, function.name, function.hwd, target, function.span)
    return _Translator(module, library).function(function, path[path.index(function.hwd):])


class _Translator:
    def __init__(self, module: ast.Module, library: Library):
        self.module = module
        self.library = library
        self.descriptions = {name: library.get(name) for name in library.names()}
        self.module_names = (
            {c.name for c in module.constants}
            | {t.name for t in module.types}
            | {f.name for f in module.functions}
        )

    def function(self, f: ast.Function, path: list[str]) -> ast.Function:
        """TRANSLATEFUNCTION: one step per edge of `path` (which starts at f's level)."""
        for step in self.steps(path):
            f = self.step(f, step)
        return f

    def steps(self, path: list[str]) -> tuple[Step, ...]:
        """The steps along `path`, each knowing the ones after it (built from the end)."""
        steps: tuple[Step, ...] = ()
        for parent, child in reversed(list(zip(path, path[1:], strict=False))):
            source, target = self.descriptions[parent], self.descriptions[child]
            mapping = find_equivalent_par_groups(source, target)  # A.2
            steps = (Step(source, target, mapping, steps), *steps)
        return steps

    def step(self, f: ast.Function, step: Step) -> ast.Function:
        """TRANSLATE: one step from `step.source` to its child `step.target`."""
        f = translate_spaces(f, step)  # A.3
        statics = host_constants(f, self.module, StaticInts(self.descriptions, {}))
        names = NameSupply(names_in(f) | self.module_names)
        globals_ = {p.name for p in f.params} | {c.name for c in self.module.constants}
        f = translate_foreach_stmts(f, step, names, statics, globals_)  # A.4
        return replace(f, hwd=step.target.name)


def _with_imports(
    translated: ast.Module, original: ast.Module, path: list[str], library: Library
) -> ast.Module:
    """Import the descriptions the translated functions are written for and read constants
    of; drop imports of the levels the functions left behind."""
    levels = set(library.names())
    needed = {f.hwd for f in translated.functions}
    for f in translated.functions:
        needed |= {n.path[0] for n in ast.walk(f) if isinstance(n, ast.HwdConst)}
    imports: list[ast.Import] = []
    seen: set[str] = set()
    for imp in original.imports:
        name = imp.dotted
        if len(imp.path) == 1 and name in levels:
            if name not in needed and name in path:
                name = path[-1]
            if name in seen:
                continue
            seen.add(name)
            imports.append(imp if name == imp.dotted else ast.Import((name,), span=imp.span))
        else:
            imports.append(imp)
    had_hwd_imports = any(len(i.path) == 1 and i.dotted in levels for i in original.imports)
    if had_hwd_imports:
        imports += [ast.Import((n,)) for n in sorted(needed - seen)]
    return replace(translated, imports=tuple(imports))
