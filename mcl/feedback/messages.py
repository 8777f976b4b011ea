"""Feedback messages are data (docs/architecture.md: "diagnostics are data").

An analysis returns `Message` objects; rendering them to the terminal (`render_text`) or
to JSON (`render_json`) is separate. Every quantity a message mentions is a `Value`: a
SymPy expression in the kernel's own parameter names, plus its number when the user gave
values for every name it uses (feedback.md, "Principles").

This module does not import SymPy: `Value` only holds an expression object, so `mcl
check` without feedback never pays for the SymPy import.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from mcl.diagnostics import Span


class FeedbackSeverity(str, Enum):
    """How strongly a message asks for action: `info` states a fact (counts, transfers,
    reuse), `suggestion` proposes a change (use `local`, compute several elements per
    unit), `warning` says a figure is only an approximation or cannot be computed."""

    INFO = "info"
    SUGGESTION = "suggestion"
    WARNING = "warning"


@dataclass(frozen=True)
class Value:
    """One named quantity of a message. `symbolic` is a SymPy expression (in the kernel's
    parameter names); `numeric` its number when all of them are known, else None, and
    then `needs` names the values that are missing."""

    symbolic: Any
    numeric: int | float | None = None
    needs: tuple[str, ...] = ()
    # The number is an estimate (a sum too long to add up within the analysis budget).
    estimated: bool = False

    @property
    def text(self) -> str:
        """The formula as printed (`formula_text`)."""
        return formula_text(self.symbolic)


def formula_text(expr: Any) -> str:
    """`str(expr)`. A SymPy formula is printed once per process: a message's text, its
    report and the editor's worker each print its figures, and the worker analyses the
    kernel again at every edit, which gives back the same formulas (docs/feedback.md,
    "Speed"). SymPy's expressions are immutable, and two that compare equal have the
    same structure, so the same text. Anything else (a Python number; a mutable SymPy
    object, which has no hash) is printed each time."""
    if type(expr).__module__.startswith("sympy."):
        try:
            return _printed(expr)
        except TypeError:
            pass
    return str(expr)


@functools.lru_cache(maxsize=4096, typed=True)  # 2 and 2.0 print apart
def _printed(expr: Any) -> str:
    return str(expr)


@dataclass(frozen=True)
class Message:
    """One piece of performance feedback, attached to the source it is about.

    `code` is stable (documented in docs/feedback.md); `loops` names the loops around the
    expression (outermost first), so a report can group messages by function and loop;
    `approximate` marks figures that are upper bounds or estimates (data-dependent loop
    bounds, `if`s that limit execution); `shown` names the values the text already shows
    (`{name}` fields, see `mcl.feedback.emit.fill`): a report lists only the others."""

    severity: FeedbackSeverity
    analysis: str
    code: str
    text: str
    span: Span | None = None
    values: tuple[tuple[str, Value], ...] = ()
    function: str = ""
    loops: tuple[str, ...] = ()
    approximate: bool = False
    hint: str | None = field(default=None)
    shown: tuple[str, ...] = ()

    @property
    def value_map(self) -> dict[str, Value]:
        return dict(self.values)

    @property
    def needs(self) -> tuple[str, ...]:
        """Names whose values the user must supply for every figure to be numeric."""
        seen: dict[str, None] = {}
        for _, v in self.values:
            for name in v.needs:
                seen[name] = None
        return tuple(seen)


# Most pressing first: what is wrong, then what to try, then facts.
SEVERITY_ORDER = {FeedbackSeverity.WARNING: 0, FeedbackSeverity.SUGGESTION: 1,
                  FeedbackSeverity.INFO: 2}


def at_least(m: Message, severity: FeedbackSeverity) -> bool:
    """Is `m` at least as pressing as `severity` (`--severity suggestion` keeps
    suggestions and warnings)?"""
    return SEVERITY_ORDER[m.severity] <= SEVERITY_ORDER[severity]


def sort_key(m: Message) -> tuple:
    """Messages by function and source position; a stable sort keeps the analyses'
    order (registry order: statistics, transfers, reuse, ...) at one position."""
    s = m.span
    where = (s.file, s.line, s.column) if s else ("", 0, 0)
    return (m.function, *where)
