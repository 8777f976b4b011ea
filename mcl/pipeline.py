"""The pass list: the one place that says in which order a kernel goes through mcl.

    load -> check -> translate to a level -> check -> feedback | interpret | generate

(the paper's outer process, sections 4.4 and 6.1: a kernel is written for one hardware
description, translated down the hierarchy, and code is generated from a leaf). Every
command, the report, tuning and the language server go through these functions; no other
module calls the loader, the checker and the translator in a row.

    load(path, include_dirs, library) -> Program              parse + imports
    check(program, library) -> CheckedProgram                  the checker's diagnostics
    translate(checked, level, library) -> CheckedProgram       translate, then check again
    check_source(path, include_dirs, library, level)           the first three, errors kept
    checked_at(path, include_dirs, library, level=None)        the same, errors raised
    checked(program, library) -> CheckedProgram                 a program with its side tables
    lower(program, level, library, function=None)              a clean program down to level,
                                                               checked (tables and all)
    feedback(checked, library, options) -> FileFeedback        performance feedback
    generate(checked, target, library, ...) -> GeneratedModule kernel code at a leaf

`MCL_DUMP=after:<pass>[,after:<pass>...]` prints the program as MCPL to stderr after each
named pass (`load`, `check`, `translate`, and code generation's lowering passes,
`mcl.codegen.passes`: `resolve-constants`, `override-constants`, `kernel-views`), as a
compiler's lowering log does (the mechanism: mcl.mcpl.dump).

Heavy modules (the translator, feedback, code generation) are imported where they are
used, so loading and checking a kernel never imports them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mcl.diagnostics import Diagnostic, MclError
from mcl.mcpl.ast import Module, has_foreach
from mcl.mcpl.check import check_program
from mcl.mcpl.checked import CheckedProgram
from mcl.mcpl.dump import asked, dump_program
from mcl.mcpl.loader import Program, as_program, load_program
from mcl.mcpl.sidetables import SideTables

if TYPE_CHECKING:
    from mcl.codegen.host_eval import Number
    from mcl.codegen.mapping import OpenCLMapping
    from mcl.codegen.plan import GeneratedModule
    from mcl.feedback.kept_findings import KeptFindings
    from mcl.feedback.stage import FeedbackOptions, FileFeedback
    from mcl.hdl.library import HwdLibrary

# The front end's passes whose result MCL_DUMP can print, in the order they run (code
# generation's follow them: mcl.codegen.passes.LOWERING).
PASSES = ("load", "check", "translate")


@dataclass
class SourceCheck:
    """`check_source`'s answer: the program as far as it got (None when it did not load)
    and every diagnostic on the way, also the loader's and the translator's errors."""

    program: Program | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    level: str | None = None  # the level the program was translated to
    feedback: FileFeedback | None = None  # when asked for and the program is clean
    tables: SideTables = field(default_factory=SideTables)  # the last check's, of `program`

    def checked(self) -> CheckedProgram | None:
        """The program with its diagnostics, once it loaded."""
        if self.program is None:
            return None
        return CheckedProgram(self.program, tuple(self.diagnostics), self.level,
                              tables=self.tables)


# ------------------------------------------------------------------------- the passes


def load(path: str | Path, include_dirs: Iterable[str | Path], library: HwdLibrary
         ) -> Program:
    """Parse `path` and the modules it imports (MclError on syntax and import errors)."""
    program = load_program(path, list(include_dirs), library)
    _dump("load", program)
    return program


def check(program: Program | Module, library: HwdLibrary, level: str | None = None,
          notes: Sequence[Diagnostic] = (), flow: bool = True) -> CheckedProgram:
    """Check `program` (mcpl.md section 5; a lone module is a program of one module);
    `notes` (the translation's) go first; `flow`: with the flow checks
    (mcl.mcpl.check.check_program)."""
    program = as_program(program)
    tables = SideTables()
    checked = CheckedProgram(program, (*notes, *check_program(program, library, tables, flow)),
                             level, tuple(notes), tables)
    _dump("check", program, level)
    return checked


def translate(checked: CheckedProgram, level: str, library: HwdLibrary) -> CheckedProgram:
    """Translate a clean program to `level` (the paper's Appendix A) and check the result:
    translation assumes a valid kernel, so errors stop here (MclError)."""
    from mcl.translate import translate_program

    result = translate_program(checked.valid(), level, library)
    assert result.program is not None  # translate_program always sets the program
    _dump("translate", result.program, level)
    return check(result.program, library, level, result.notes)


# ------------------------------------------------------------------ the usual sequences


def check_source(path: str | Path, include_dirs: Iterable[str | Path], library: HwdLibrary,
                 level: str | None = None, options: FeedbackOptions | None = None,
                 flow: bool = True) -> SourceCheck:
    """load -> check (-> translate to `level` -> check, when the source is clean) (->
    feedback with `options`, when the result is clean), with every error as a diagnostic:
    what `mcl check` and the editor show. `flow=False` leaves out the source's flow
    checks (a caller that has their diagnostics from a check of the same text)."""
    found = SourceCheck()
    try:
        found.program = load(path, include_dirs, library)
        checked = check(found.program, library, flow=flow)
        found.diagnostics, found.tables = list(checked.diagnostics), checked.tables
        if level is not None and not checked.errors:
            lowered = translate(checked, level, library)
            found.program, found.level, found.tables = lowered.program, level, lowered.tables
            # The source's warnings stay: the translation is checked on top of them.
            found.diagnostics += _new_findings(found.diagnostics, lowered.diagnostics)
        program = found.checked()
        if options is not None and program is not None and not program.errors:
            found.feedback = feedback(program, library, options)
            from mcl.feedback.block_refusal import refused_blocks

            found.diagnostics += refused_blocks(found.feedback.findings,
                                                found.feedback.levels)
    except MclError as exc:
        found.diagnostics += exc.diagnostics
    return found


def _new_findings(source: Sequence[Diagnostic], translated: Sequence[Diagnostic]
                  ) -> list[Diagnostic]:
    """The translated program's diagnostics that the source's check has not already made.

    Translation keeps the source's spans, so a rule that fires on the source fires again
    on its translation at the same place (a barrier under `if (ti < n)` read before and
    after translation, with `local` renamed `shared` or the index recomputed in the
    message). The checker cannot tell the two readings apart: it checks one program,
    whichever it is given. Here, the one place where the two readings meet, a finding of
    the same rule and severity at the same source position is kept once, in the source's
    words, which name what the user wrote; a translated finding with no span is kept.
    """
    def where(d: Diagnostic) -> tuple[object, ...] | None:
        if d.span is None:
            return None
        return d.code, d.severity, d.span.file, d.span.line, d.span.column

    seen = {where(d) for d in source} - {None}
    return [d for d in translated if where(d) is None or where(d) not in seen]


def check_file(path: str | Path, include_dirs: Iterable[str | Path], library: HwdLibrary
               ) -> CheckedProgram:
    """load -> check, the checker's errors kept in the result (MclError only for what
    stops loading: syntax and imports)."""
    return check(load(path, include_dirs, library), library)


def checked_at(path: str | Path, include_dirs: Iterable[str | Path], library: HwdLibrary,
               level: str | None = None) -> CheckedProgram:
    """load -> check (-> translate to `level` -> check); MclError with the errors of the
    first pass that has any."""
    checked = check_file(path, include_dirs, library)
    checked.valid()
    if level is None:
        return checked
    translated = translate(checked, level, library)
    translated.valid()
    return translated


def checked(program: CheckedProgram | Program | Module, library: HwdLibrary
            ) -> CheckedProgram:
    """`program` with the checker's side tables (what feedback and the interpreter read):
    as it is when it was checked, else checked now."""
    if isinstance(program, CheckedProgram):
        return program
    return check(program, library)


def lower(program: CheckedProgram | Program, level: str, library: HwdLibrary,
          function: str | None = None) -> CheckedProgram:
    """A program that checked clean, at `level`, with its side tables: translated (and
    checked again) when `function` (else any function with foreach statements) is
    written at a level above it; as it is otherwise (a bare `Program` checked now).
    MclError when the program or its translation does not check."""
    given = checked(program, library)
    if not needs_translation(given.main, level, library, function):
        return given
    translated = translate(given, level, library)
    translated.valid()
    return translated


def needs_translation(main: Module, level: str, library: HwdLibrary,
                      function: str | None = None) -> bool:
    """Is a function that has to run at `level` written above it? With `function`, that
    one; else every kernel (a function with foreach statements). A function of another
    branch of the hierarchy is not translated (the translator leaves it, with a note)."""
    if function is not None:
        found = main.function(function)
        return found is not None and found.hwd != level
    above = set(library.ancestors(level)) if level in library else set()
    return any(f.hwd in above and has_foreach(f) for f in main.functions)


def require_reachable(main: Module, level: str, library: HwdLibrary) -> None:
    """Kernels all written on another branch than `level` (or below it) leave nothing to
    run there: the translation's error names the branches (`translate-sideways`), as
    `mcl check --level` says it, instead of "no kernel"."""
    from mcl.translate import translate_module

    kernels = [f for f in main.functions if has_foreach(f)]
    on_path = {*library.ancestors(level), level} if level in library else {level}
    if kernels and not any(f.hwd in on_path for f in kernels):
        translate_module(main, level, library)  # raises: no kernel lies on the path


# ---------------------------------------------------------------------- the consumers


def feedback(checked: CheckedProgram, library: HwdLibrary, options: FeedbackOptions,
             kept: KeptFindings | None = None) -> FileFeedback:
    """Performance feedback on every kernel of a clean program, at its level; `kept`:
    the findings of unchanged kernels from a run before (mcl.feedback.kept_findings)."""
    from mcl.feedback.stage import run_feedback

    checked.valid()
    if kept is None:
        return run_feedback(checked, library, options)
    return run_feedback(checked, library, options, kept)


def generate(checked: CheckedProgram, target: str, library: HwdLibrary,
             mapping: OpenCLMapping | None = None, only: set[str] | None = None,
             overrides: Mapping[str, Number] | None = None, language: str | None = None
             ) -> GeneratedModule:
    """Kernel code for leaf `target` from a program that checked clean, translated there
    first when its kernels are written above it (section 4.4: "First, the compiler
    translates the program to nvidia, then it translates to fermi, and from there the
    compiler generates OpenCL and C++ code"). Code generation reads the types of the
    checker's side tables: those of `checked` when it is at the leaf (no second check),
    else those of the translation's check. `language`: the backend (mcl.backends;
    default DEFAULT_BACKEND)."""
    from mcl.backends import generate_module
    from mcl.codegen.opencl import require_leaf

    if not isinstance(checked, CheckedProgram):  # a caller without type hints
        raise TypeError("pipeline.generate takes a CheckedProgram: check a bare program "
                        "first (pipeline.checked(program, library))")
    require_leaf(target, library)  # before any translation is tried
    require_reachable(checked.main, target, library)
    dump_after()  # a name MCL_DUMP cannot mean, before the lowering passes read it
    at_leaf = lower(checked, target, library)
    return generate_module(at_leaf, target, library, mapping, only, overrides, language)


# ---------------------------------------------------------------------------- MCL_DUMP


def pass_names() -> tuple[str, ...]:
    """Every pass MCL_DUMP can name, in the order they run: the front end's, then code
    generation's lowering passes, the shared ones and those of every backend that loads
    (one that cannot load generates nothing to dump)."""
    from mcl.backends import backend_names, get_backend
    from mcl.codegen.passes import LOWERING, backend_passes

    names = [*PASSES, *(p.name for p in LOWERING)]
    for name in backend_names():
        try:
            own = backend_passes(get_backend(name))
        except MclError:
            continue
        names += [p.name for p in own if p.name not in names]
    return tuple(names)


def dump_after() -> frozenset[str]:
    """The passes MCL_DUMP asks to print after; MclError, with every pass, for a value it
    cannot mean (code generation is imported only to list its passes)."""
    return asked(pass_names, PASSES)


def _dump(name: str, program: Program, level: str | None = None) -> None:
    dump_after()  # a wrong name is an error at the first pass, not only at code generation
    dump_program(name, program, level)
