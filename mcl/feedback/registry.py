"""The feedback engine: which analyses run for a description, and running them.

An analysis is a function `(function, program, hwd, values) -> list[Message]`, registered
with the `@analysis` decorator together with a predicate on the hardware description:
which analyses run depends on what the description exposes (feedback.md, "Principles":
no host -> no transfer report; no finite execution slots -> no advice to compute several
elements per unit; no cache -> no cache analysis).

Adding an analysis: write a module in `mcl/feedback/` that decorates its function with
`@analysis(...)` and add the module's name to `ANALYSIS_MODULES`; a separate package can
register through the entry-point group `mcl.feedback_analyses` instead.
"""

from __future__ import annotations

import importlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from mcl.diagnostics import MclError, closest_names
from mcl.feedback.messages import Message, Severity, sort_key
from mcl.feedback.value_checks import value_errors

if TYPE_CHECKING:
    from mcl.feedback.kernel import KernelFacts
    from mcl.hdl.model import HardwareDescription
    from mcl.mcpl.ast import Function

AnalysisFn = Callable[["Function", Any, "HardwareDescription", Mapping[str, Any]], list[Message]]
Predicate = Callable[["HardwareDescription"], bool]

# Modules that register analyses, in report order. A module listed here that does not
# exist (yet) is skipped.
ANALYSIS_MODULES = ("opstats", "transfers", "reuse", "memory", "elements", "cache", "functions",
                    "unit_counts")
ENTRY_POINT_GROUP = "mcl.feedback_analyses"


@dataclass(frozen=True)
class Analysis:
    name: str
    run: AnalysisFn
    applies: Predicate
    description: str = ""


_REGISTRY: dict[str, Analysis] = {}
_loaded = False


def analysis(name: str, when: Predicate | None = None, description: str = ""
             ) -> Callable[[AnalysisFn], AnalysisFn]:
    """Register an analysis under `name`; it runs for descriptions where `when(hwd)`."""

    def register(fn: AnalysisFn) -> AnalysisFn:
        _REGISTRY[name] = Analysis(name, fn, when or (lambda _hwd: True),
                                   description or (fn.__doc__ or "").strip().split("\n")[0])
        return fn

    return register


def analyses() -> list[Analysis]:
    """Every registered analysis, built-in ones first."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in ANALYSIS_MODULES:
            name = f"mcl.feedback.{module}"
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as exc:
                if exc.name != name:
                    raise
        _load_entry_points()
    return list(_REGISTRY.values())


def _load_entry_points() -> None:
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        ep.load()


def applicable(hwd: HardwareDescription) -> list[Analysis]:
    """The analyses that run for `hwd`."""
    return [a for a in analyses() if a.applies(hwd)]


def analyse(function: Function, program: Any, hwd: HardwareDescription,
            values: Mapping[str, Any] | None = None, only: Iterable[str] | None = None
            ) -> list[Message]:
    """All feedback on `function` at level `hwd`, in source order."""
    from mcl.feedback.budget import budget

    values = dict(values or {})
    wanted = set(only) if only is not None else None
    messages: list[Message] = []
    with budget() as b:
        for a in applicable(hwd):
            if wanted is None or a.name in wanted:
                b.cut = False
                found = a.run(function, program, hwd, values)
                if b.cut:
                    found = [replace(m, approximate=True) for m in found]
                    found.append(Message(
                        Severity.WARNING, a.name, "feedback-budget",
                        f"the {a.name} analysis of {function.name} ran out of its time "
                        f"budget ({b.seconds:g} s of CPU time): figures it could not "
                        "simplify in time are left as sums or marked approximate",
                        function.span, function=function.name,
                        hint="set MCL_FEEDBACK_BUDGET=SECONDS for a larger budget"))
                messages += found
    return sorted(messages, key=sort_key)


def kernels_of(module: Any) -> list[Function]:
    """The functions of a module to report on: those no other function of the module
    calls (helpers are counted through their callers, paper 6.2)."""
    from mcl.mcpl import ast

    called = {n.func for f in module.functions for n in ast.walk(f.body)
              if isinstance(n, ast.Call)}
    return [f for f in module.functions if f.name not in called]


def analyse_program(program: Any, library: Any, values: Mapping[str, Any] | None = None
                    ) -> tuple[list[Message], dict[str, str]]:
    """Feedback on every kernel of the program's main module, each at its own level (the
    level `mcl check --level` translated it to). Returns the messages and the level of
    each analysed function."""
    values = dict(values or {})
    module = program.main if hasattr(program, "main") else program
    messages: list[Message] = []
    levels: dict[str, str] = {}
    functions = kernels_of(module)
    problems = [d for f in functions for d in value_errors(f, values)]
    if problems:
        raise MclError(problems)
    for f in functions:
        hwd = library.get(f.hwd)
        levels[f.name] = f.hwd
        messages += analyse(f, program, hwd, values)
    messages += unknown_value_messages(functions, values)
    return messages, levels


def unknown_value_messages(functions: Iterable[Function], values: Mapping[str, Any]
                           ) -> list[Message]:
    """A warning for each `-D` name that is no parameter of an analysed function (a typo
    would otherwise silently leave figures symbolic). `iters_V`, the iteration count of a
    loop with data-dependent bounds, is always accepted."""
    known: set[str] = set()
    for f in functions:
        known |= {p.name for p in f.params}
    out = []
    for name in values:
        if name in known or name.startswith("iters_"):
            continue
        close = closest_names(name, known)
        hint = ("did you mean " + " or ".join(f"'{c}'" for c in close) + "?") if close else None
        out.append(Message(Severity.WARNING, "values", "values-unknown-name",
                           f"value given for '{name}', which is not a name of the kernel",
                           hint=hint))
    return out


# ----------------------------------------------------------------------------- facts

_FACTS: OrderedDict[tuple[int, int, int], tuple[Any, Any, Any, KernelFacts]] = OrderedDict()
_FACTS_SIZE = 16


def facts_for(function: Function, program: Any, hwd: HardwareDescription) -> KernelFacts:
    """The facts of a function, built once and shared by all analyses of one run. Keyed by
    identity (equal trees from different files have different spans); the entry keeps
    the objects alive, so an id cannot be reused while it is cached."""
    from mcl.feedback.kernel import build_facts

    key = (id(function), id(program), id(hwd))
    hit = _FACTS.get(key)
    if hit is not None:
        _FACTS.move_to_end(key)
        return hit[3]
    facts = build_facts(function, program, hwd)
    _FACTS[key] = (function, program, hwd, facts)
    while len(_FACTS) > _FACTS_SIZE:
        _FACTS.popitem(last=False)
    return facts
