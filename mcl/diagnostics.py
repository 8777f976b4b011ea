"""Diagnostics are data (docs/architecture.md): errors, warnings and notes with a source span.

Every pass reports problems as `Diagnostic` objects; rendering them to the terminal or to
JSON is separate (`mcl.render`). A pass that cannot continue raises `MclError` carrying
its diagnostics; the CLI turns that into exit code 1, never a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path


@dataclass(frozen=True, order=True)
class Span:
    """A region of a source file. Lines and columns are 1-based; end is inclusive-exclusive
    on columns (end_column points just past the last character)."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    @staticmethod
    def point(file: str | Path, line: int, column: int, length: int = 1) -> Span:
        return Span(str(file), line, column, line, column + max(length, 1))

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in a source file (HDL or MCPL)."""

    severity: Severity
    code: str  # stable identifier, e.g. "hdl-unknown-reference", "mcpl-type-mismatch"
    message: str
    span: Span | None = None
    hint: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __str__(self) -> str:
        where = f"{self.span}: " if self.span else ""
        text = f"{where}{self.severity.value}: {self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


def error(code: str, message: str, span: Span | None = None, hint: str | None = None) -> Diagnostic:
    return Diagnostic(Severity.ERROR, code, message, span, hint)


def warning(code: str, message: str, span: Span | None = None,
            hint: str | None = None) -> Diagnostic:
    return Diagnostic(Severity.WARNING, code, message, span, hint)


class MclError(Exception):
    """Raised by a pass that cannot continue; carries one or more diagnostics."""

    def __init__(self, diagnostics: Diagnostic | list[Diagnostic]):
        self.diagnostics: list[Diagnostic] = (
            [diagnostics] if isinstance(diagnostics, Diagnostic) else list(diagnostics)
        )
        super().__init__("\n".join(str(d) for d in self.diagnostics))

    def __reduce__(self) -> tuple[type[MclError], tuple[list[Diagnostic]]]:
        # pickled with its diagnostics, not its text (a compile in a child process,
        # mcl.cpu_budget, hands its error back so)
        return (MclError, (self.diagnostics,))


def closest_names(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Closest existing names for a misspelled one, for 'did you mean ...?' hints. A name
    that differs only in case (`GPU` for `gpu`) is the answer; otherwise the close matches
    as written, then those that are close ignoring case (`THREDS` for `threads`)."""
    import difflib

    pool = sorted(set(candidates))
    by_lower: dict[str, list[str]] = {}
    for c in pool:
        by_lower.setdefault(c.lower(), []).append(c)
    same_but_case = by_lower.get(name.lower(), [])
    if same_but_case and name not in same_but_case:
        return same_but_case[:n]
    close = difflib.get_close_matches(name, pool, n=n, cutoff=0.6)
    close_ignoring_case = [
        c
        for lower in difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=0.6)
        for c in by_lower[lower]
    ]
    found: list[str] = []
    for c in [*close, *close_ignoring_case]:
        if c not in found:
            found.append(c)
    return found[:n]


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    close = closest_names(name, candidates)
    if not close:
        return None
    return "did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
