"""The feedback engine: which analyses run for a description, and running them.

An analysis is an `mcl.feedback.analysis.Analysis` record: a function of an
`AnalysisContext` (function, program, description, values and the function's facts),
with a predicate on the hardware description: which analyses run depends on what the
description exposes (feedback.md, "Principles": no host -> no transfer report; no finite
execution slots -> no advice to compute several elements per unit; no cache -> no cache
analysis).

Adding an analysis: write a module in `mcl/feedback/analyses/` with a function
`(ctx: AnalysisContext) -> list[Finding]` (mcl.feedback.findings) and the declarations
of its message codes (`MESSAGE_CODES`), and add an `Analysis(name, function, when, description=...,
codes=...)` row for it to `BUILTIN` below (plain imports: a module that fails to import
fails loudly); a separate package can offer `Analysis` objects through the entry-point
group `mcl.feedback_analyses` instead (docs/architecture.md, "Feedback in layers").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from mcl.diagnostics import MclError, closest_names
from mcl.feedback import kernel_api, lockstep, occupancy
from mcl.feedback.analyses import (
    cache,
    elements,
    functions,
    irregular,
    memory,
    opstats,
    reuse,
    roofline,
    timemodel,
    transfers,
    unit_counts,
)
from mcl.feedback.analysis import Analysis, AnalysisContext
from mcl.feedback.facts import resident
from mcl.feedback.findings import Finding, finding_of
from mcl.feedback.message_code import MessageCode
from mcl.feedback.messages import FeedbackSeverity, Message, sort_key
from mcl.feedback.value_checks import value_errors
from mcl.plugins import entry_points

if TYPE_CHECKING:
    from mcl.feedback.kept_findings import KeptFindings
    from mcl.hdl.library import HwdLibrary
    from mcl.hdl.model import HardwareDescription
    from mcl.mcpl.ast import Function
    from mcl.mcpl.checked import CheckedProgram

# The built-in analyses, in report order.
BUILTIN: tuple[Analysis, ...] = (
    Analysis("opstats", opstats.operation_statistics,
             description="operation statistics (paper 6.2)", codes=opstats.MESSAGE_CODES),
    Analysis("transfers", transfers.transfers, transfers.has_host,
             description="host <-> device transfers", codes=transfers.MESSAGE_CODES),
    Analysis("reuse", reuse.data_reuse, description="data reuse (paper 6.3)",
             codes=reuse.MESSAGE_CODES),
    Analysis("memory", memory.faster_memory, memory.has_several_spaces,
             description="faster memory proposals (6.3)", codes=memory.MESSAGE_CODES),
    Analysis("elements", elements.several_elements, resident.finite_slots,
             description="several elements per unit", codes=elements.MESSAGE_CODES),
    Analysis("cache", cache.cache_analysis, cache.has_caches,
             description="cache behaviour (paper 6.4)", codes=cache.MESSAGE_CODES),
    # The descriptions' functions build their messages with lockstep and occupancy.
    Analysis(kernel_api.ANALYSIS, functions.feedback_functions_analysis,
             functions.names_functions,
             description="performance feedback functions of the description (paper 6.5)",
             codes=(*functions.MESSAGE_CODES, *lockstep.MESSAGE_CODES,
                    *occupancy.MESSAGE_CODES)),
    Analysis("unit_counts", unit_counts.units_over_limit, unit_counts.has_unit_limits,
             description="units beyond a par_group's limit", codes=unit_counts.MESSAGE_CODES),
    Analysis("irregular", irregular.irregular_access,
             description="data-dependent stores and loop bounds",
             codes=irregular.MESSAGE_CODES),
    Analysis("roofline", roofline.roofline, roofline.has_peak,
             description="the roofline: bound and attainable performance",
             codes=roofline.MESSAGE_CODES),
    # Last: it reads the messages of all the others and states each suggestion's gain.
    Analysis("timemodel", timemodel.time_model, timemodel.has_time_model,
             description="the time model: estimate and each suggestion's gain",
             codes=timemodel.MESSAGE_CODES, revises=True),
)
# The codes of the engine's own messages (mcl.feedback.codes).
MESSAGE_CODES = (
    MessageCode("feedback-budget", "analysis out of time: figures approximate",
                (FeedbackSeverity.WARNING,), "time-budget-feedback-budget"),
    MessageCode("values-unknown-name", "value for a name the kernel does not have",
                (FeedbackSeverity.WARNING,), "values-values"),
)
ENTRY_POINT_GROUP = "mcl.feedback_analyses"


def analyses() -> list[Analysis]:
    """Every analysis: the built-in ones first, then those of installed packages."""
    return [*BUILTIN, *_entry_point_analyses()]


def _entry_point_analyses() -> list[Analysis]:
    found = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        obj = ep.load()
        if not isinstance(obj, Analysis):
            raise TypeError(f"entry point {ep.name} = {ep.value} of group {ENTRY_POINT_GROUP} "
                            f"is a {type(obj).__name__}, not an mcl.feedback.analysis.Analysis")
        found.append(obj)
    return found


def applicable(hwd: HardwareDescription, among: Sequence[Analysis] | None = None
               ) -> list[Analysis]:
    """The analyses (of `among`, default all) that run for `hwd`."""
    return [a for a in (analyses() if among is None else among) if a.applies(hwd)]


def analyse(function: Function, checked: CheckedProgram, hwd: HardwareDescription,
            values: Mapping[str, Any] | None = None, only: Iterable[str] | None = None,
            among: Sequence[Analysis] | None = None, clock_hz: float | None = None
            ) -> list[Message]:
    """The messages of `analyse_findings` (for text, JSON and the editor)."""
    return [f.message for f in analyse_findings(function, checked, hwd, values, only, among,
                                                clock_hz)]


def analyse_findings(function: Function, checked: CheckedProgram, hwd: HardwareDescription,
                     values: Mapping[str, Any] | None = None,
                     only: Iterable[str] | None = None,
                     among: Sequence[Analysis] | None = None, clock_hz: float | None = None
                     ) -> list[Finding]:
    """All findings on `function` of a checked program (`mcl.pipeline.check`; the
    analyses read its side tables) at level `hwd`, in source order: the analyses of
    `among` (default: all) that apply to `hwd`, only those named in `only` if given;
    the time model at `clock_hz` where given (AnalysisContext.clock_hz)."""
    context = AnalysisContext(function, checked, hwd, dict(values or {}), clock_hz=clock_hz)
    wanted = set(only) if only is not None else None
    findings: list[Finding] = []
    for a in applicable(hwd, among):
        if wanted is None or a.name in wanted:
            context.earlier = tuple(findings)
            found, complete = _run_within_budget(a, context)
            if not complete:  # nothing of it: no suggestion or figure on partial results
                context.forget_facts()
                findings.append(_not_analysed(a, function))
                continue
            if a.revises:  # the earlier findings come back, revised
                found, findings = found[len(findings):], found[:len(findings)]
            findings += found
    return sorted(findings, key=lambda f: sort_key(f.message))


def _run_within_budget(a: Analysis, context: AnalysisContext) -> tuple[list[Finding], bool]:
    """The findings of analysis `a` run within a budget of its own (mcl.feedback.budget),
    and whether it finished without taking a fallback. A budget per analysis: one that
    runs out leaves the others theirs."""
    from mcl.feedback.budget import OutOfTime, budget

    with budget() as b:
        try:
            found = [finding_of(item) for item in a.run(context)]
        except OutOfTime:  # spent() marked the budget cut: nothing of it is shown
            found = []
    return found, not b.cut


def _not_analysed(a: Analysis, function: Function) -> Finding:
    """The one message of an analysis that ran out of its budget: its findings would rest
    on a fallback (an unevaluated sum, "not proven equal"), so none is shown, and the
    later analyses start again from fresh facts (docs/feedback.md, "Time budget")."""
    from mcl.feedback.budget import default_seconds

    return Finding(Message(
        FeedbackSeverity.WARNING, a.name, "feedback-budget",
        f"{function.name} not analysed by the {a.name} analysis: it ran out of its time "
        f"budget ({default_seconds():g} s of CPU time)", function.span,
        function=function.name,
        hint="set MCL_FEEDBACK_BUDGET=SECONDS for a larger budget, or simplify the loop "
        "bounds"))


def kernels_of(module: Any) -> list[Function]:
    """The functions of a module to report on: those no other function of the module
    calls (helpers are counted through their callers, paper 6.2)."""
    from mcl.mcpl import ast

    called = {n.func for f in module.functions for n in ast.walk(f.body)
              if isinstance(n, ast.Call)}
    return [f for f in module.functions if f.name not in called]


def analyse_program(checked: CheckedProgram, library: HwdLibrary,
                    values: Mapping[str, Any] | None = None, clock_hz: float | None = None
                    ) -> tuple[list[Message], dict[str, str]]:
    """The messages of `analyse_program_findings`, and the level of each function."""
    findings, levels = analyse_program_findings(checked, library, values, clock_hz)
    return [f.message for f in findings], levels


def analyse_program_findings(checked: CheckedProgram, library: HwdLibrary,
                             values: Mapping[str, Any] | None = None,
                             clock_hz: float | None = None, kept: KeptFindings | None = None
                             ) -> tuple[list[Finding], dict[str, str]]:
    """Findings on every kernel of the program's main module, each at its own level (the
    level `mcl check --level` translated it to), the time model at `clock_hz` where given.
    Returns the findings and the level of each analysed function. With `kept`, a kernel
    whose tree and all it reads are those of a run before keeps that run's findings
    (mcl.feedback.kept_findings)."""
    values = dict(values or {})
    module = checked.program.main
    findings: list[Finding] = []
    levels: dict[str, str] = {}
    kernels = kernels_of(module)
    problems = [d for f in kernels for d in value_errors(f, values)]
    if problems:
        raise MclError(problems)
    for f in kernels:
        hwd = library.get(f.hwd)
        levels[f.name] = f.hwd
        analyse = partial(analyse_findings, f, checked, hwd, values, clock_hz=clock_hz)
        findings += analyse() if kept is None else \
            kept.findings(f, checked, library, values, clock_hz, analyse)
    findings += [Finding(m) for m in unknown_value_messages(kernels, values)]
    return findings, levels


def unknown_value_messages(functions: Iterable[Function], values: Mapping[str, Any]
                           ) -> list[Message]:
    """A warning for each `-D` name that is no parameter of an analysed function (a typo
    would otherwise silently leave figures symbolic). `iters_V`, the iteration count of a
    loop with data-dependent bounds, and `max_iters_V`, its maximum
    (mcl.feedback.analyses.irregular), are always accepted."""
    known: set[str] = set()
    for f in functions:
        known |= {p.name for p in f.params}
    out = []
    for name in values:
        if name in known or name.startswith(("iters_", "max_iters_")):
            continue
        close = closest_names(name, known)
        hint = ("did you mean " + " or ".join(f"'{c}'" for c in close) + "?") if close else None
        out.append(Message(FeedbackSeverity.WARNING, "values", "values-unknown-name",
                           f"value given for '{name}', which is not a name of the kernel",
                           hint=hint))
    return out
