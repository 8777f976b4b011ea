"""mcl's diagnostics and feedback messages as LSP diagnostics.

mcl spans are 1-based with an exclusive end column; LSP ranges are 0-based with an
exclusive end. Both count characters (code points) here; the server turns them into the
client's units on the way out (mcl.lsp.encoding).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from mcl.diagnostics import Diagnostic, Severity, Span
from mcl.lsp.worker import MessageRecord

SOURCE = "mcl"
FEEDBACK_SOURCE = "mcl feedback"

_SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.NOTE: lsp.DiagnosticSeverity.Information,
}
# Feedback is advice, never an error (section 6): what to try (suggestions) and what is
# only approximate (warnings) as information, plain facts as hints.
_FEEDBACK_SEVERITY = {
    "warning": lsp.DiagnosticSeverity.Information,
    "suggestion": lsp.DiagnosticSeverity.Information,
    "info": lsp.DiagnosticSeverity.Hint,
}

START = lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))


def to_range(span: Span | None) -> lsp.Range:
    if span is None:
        return START
    start = lsp.Position(max(span.line - 1, 0), max(span.column - 1, 0))
    end = lsp.Position(max(span.end_line - 1, 0), max(span.end_column - 1, 0))
    if (end.line, end.character) < (start.line, start.character):
        end = start
    return lsp.Range(start, end)


def contains(span: Span | None, line: int, character: int) -> bool:
    """Is the 0-based position inside `span` (end included, so a cursor just after a word
    still counts)?"""
    if span is None:
        return False
    here = (line + 1, character + 1)
    return (span.line, span.column) <= here <= (span.end_line, span.end_column)


def same_file(span: Span | None, path: Path) -> bool:
    if span is None:
        return False
    try:
        return Path(span.file).resolve() == path.resolve()
    except (OSError, RuntimeError, ValueError):
        return False


def _location(span: Span, text: str) -> lsp.DiagnosticRelatedInformation:
    return lsp.DiagnosticRelatedInformation(
        lsp.Location(Path(span.file).resolve().as_uri(), to_range(span)), text)


def diagnostic(d: Diagnostic, path: Path, imports: Sequence[Any] = ()) -> lsp.Diagnostic:
    """One mcl diagnostic on the document at `path`. One about another file (an imported
    module) stands on the `import` line that brings that file in (`imports`: the
    document's ast.Import nodes), names its place, and points there as related
    information."""
    here = d.span is None or same_file(d.span, path)
    message = d.message if here else f"{d.span}: {d.message}"
    related: list[lsp.DiagnosticRelatedInformation | None] = []
    if not here and d.span is not None:
        related.append(_location(d.span, d.message))
    if d.hint:
        related.append(_location(d.span, "hint: " + d.hint) if d.span else None)
    related += [_location(d.span, "note: " + n) if d.span else None for n in d.notes]
    if here:
        where = to_range(d.span)
    else:
        line = import_of(d.span, imports)
        where = to_range(line.span) if line is not None else START
    return lsp.Diagnostic(
        range=where,
        message=message + (f"\nhint: {d.hint}" if d.hint and d.span is None else ""),
        severity=_SEVERITY.get(d.severity, lsp.DiagnosticSeverity.Error),
        code=d.code,
        source=SOURCE,
        related_information=[r for r in related if r is not None] or None,
    )


def import_of(span: Span | None, imports: Sequence[Any]) -> Any:
    """The import that brings in the file of `span`: the one whose dotted path names the
    file (`import lib.math.complex;` for .../lib/math/complex.mcl); for a file imported
    further down, the first import of a module (descriptions are single names)."""
    if span is None or not imports:
        return None
    file = Path(span.file).with_suffix("")
    for imp in imports:
        parts = imp.dotted.split(".")
        if file.parts[-len(parts):] == tuple(parts):
            return imp
    modules = [imp for imp in imports if "." in imp.dotted]
    return (modules or list(imports))[0]


def feedback_diagnostic(m: MessageRecord) -> lsp.Diagnostic:
    related = [_location(m.span, "hint: " + m.hint)] if m.hint and m.span else None
    text = m.text + (" (approximate)" if m.approximate else "")
    return lsp.Diagnostic(
        range=to_range(m.span),
        message=text,
        severity=_FEEDBACK_SEVERITY.get(m.severity, lsp.DiagnosticSeverity.Hint),
        code=m.code,
        source=FEEDBACK_SOURCE,
        related_information=related,
        data={"needs": list(m.needs)} if m.needs else None,
    )
