"""What a feedback analysis is, and the context it runs in.

An analysis is an `Analysis` record: a name, a predicate on the hardware description
(which analyses run depends on what the description exposes: feedback.md, "Principles"),
and a function of one `AnalysisContext` that returns its findings (typed records,
`mcl.feedback.findings`; an installed analysis may return plain messages). The context
carries everything an analysis may use -- the function, its program, the description,
the user's values -- and the facts of the function
(`mcl.feedback.facts.kernel.KernelFacts`), built on first use and shared by all analyses
of the same context; `ctx.get(Kind)` gives a fact derived from them (the reuse
findings, the operation counts, ...), derived once per function for whichever analysis
asks first, so that analyses share results without importing each other. Nothing is
found through import side effects or caches keyed by object identity:
`mcl.feedback.registry` lists the analyses and makes one context per analysed function.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from mcl.feedback.facts.kernel import Derived, KernelFacts
    from mcl.feedback.findings import Finding
    from mcl.feedback.message_code import MessageCode
    from mcl.feedback.messages import Message
    from mcl.hdl.model import HardwareDescription
    from mcl.mcpl.ast import Function
    from mcl.mcpl.checked import CheckedProgram
    from mcl.mcpl.loader import Program

D = TypeVar("D", bound="Derived")


@dataclass
class AnalysisContext:
    """One function analysed at one level with the user's values."""

    function: Function
    checked: CheckedProgram  # the program and the checker's side tables
    hwd: HardwareDescription
    values: Mapping[str, Any] = field(default_factory=dict)
    # The findings of the analyses that ran before this one (mcl.feedback.registry): what
    # an analysis that `revises` (the time model) reads, by record type, and returns
    # revised.
    earlier: tuple[Finding, ...] = ()
    # The SM clock (Hz) the time model is evaluated at where it is not the description's
    # (mcl profile: the clock the profiler measured); None: the description's.
    clock_hz: float | None = None
    _facts: KernelFacts | None = field(default=None, repr=False, compare=False)

    @property
    def facts(self) -> KernelFacts:
        """The facts of the function (loops, items, accesses, SymPy evaluator), built once
        per context: the analyses of one run share them."""
        if self._facts is None:
            from mcl.feedback.facts.kernel import build_facts

            self._facts = build_facts(self.function, self.checked, self.hwd)
        return self._facts

    def forget_facts(self) -> None:
        """Build the facts again at the next use: after an analysis ran out of its budget
        the facts derived on its way may rest on fallbacks, and no later analysis reads
        them."""
        self._facts = None

    @property
    def program(self) -> Program:
        return self.checked.program

    def get(self, kind: type[D]) -> D:
        """A derived fact of the function (`ReuseFacts`, `OperationCosts`, ...), shared
        with the other analyses of this context."""
        return self.facts.get(kind)


Predicate = Callable[["HardwareDescription"], bool]
AnalysisFn = Callable[[AnalysisContext], "Sequence[Finding | Message]"]


def always(_hwd: HardwareDescription) -> bool:
    return True


@dataclass(frozen=True)
class Analysis:
    """A feedback analysis: `run(context)` for descriptions where `applies(hwd)`; `codes`
    declares every message code it emits (mcl.feedback.codes reads them)."""

    name: str
    run: AnalysisFn
    applies: Predicate = always
    description: str = ""
    codes: tuple[MessageCode, ...] = ()
    # `run` returns the earlier findings of the function (`context.earlier`), revised,
    # with its own: the time model states each suggestion's gain in its finding.
    revises: bool = False
