"""Refinements as code actions (docs/editor.md, "Refinements"): the offers of
`mcl apply --list` (mcl.refine.offers) for a document, made in the feedback worker and
turned into code actions by the server.

Listing offers makes each refinement, checks it at the level and verifies it through
the interpreter at three sizes: seconds, too slow for a request. So the worker computes
them after the document's feedback (`offers_of`, plain data: `OfferRecord`) and the
server keeps them with the document version they are of; a code action request is
answered from what is ready (`code_actions`), and nothing is offered on another version
of the text (the edits' positions would be wrong there)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from mcl.diagnostics import MclError, Span

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary
    from mcl.refine.offers import Offer


@dataclass(frozen=True)
class OffersJob:
    """List the offers of `path` (its text among `overlays`) at `level` (None: the
    kernel's own) with the time model at `values` (none: the reference's sizes)."""

    path: str
    overlays: tuple[tuple[str, str], ...]
    hwd_path: tuple[str, ...]
    include: tuple[str, ...]
    level: str | None
    values: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class EditRecord:
    """A refinement's text edit, 1-based and end-exclusive as spans are."""

    line: int
    column: int
    end_line: int
    end_column: int
    text: str


@dataclass(frozen=True)
class OfferRecord:
    """One verified offer as plain data: `title` for the editor, the `edits` that make
    the next version, the line it acts on, and the finding it answers (code and span)."""

    title: str
    invocation: str
    line: int
    answers_code: str | None
    answers_span: Span | None
    edits: tuple[EditRecord, ...]


@dataclass
class OffersResult:
    offers: list[OfferRecord]
    level: str | None = None  # the level the offers were made at
    seconds: float = 0.0
    cancelled: bool = False
    failure: str | None = None  # an internal error of mcl (a bug)
    not_read: str | None = None  # why the kernel could not be refined (it does not check)


# ----------------------------------------------------------------------- the worker side


def offers_of(job: OffersJob, library: HwdLibrary) -> OffersResult:
    """The verified offers of the job's kernel, best estimated gain first. The document's
    text is read from the overlays the worker has set (mcl.source_files)."""
    from mcl.refine.offers import list_offers, open_kernel

    values = dict(job.values)
    try:
        kernel = open_kernel(job.path, job.level, library, job.include, values)
    except MclError as exc:
        if job.level is None or not any(d.code == "apply-level" for d in exc.diagnostics):
            raise
        # `mcl.level` applies to every file; one written below it is refined at its own
        # level, as its feedback is (mcl.lsp.worker).
        kernel = open_kernel(job.path, None, library, job.include, values)
    offers, _ = list_offers(kernel)
    return OffersResult([_record(o) for o in offers], kernel.level)


def _record(offer: Offer) -> OfferRecord:
    answers = offer.proposal.answers
    return OfferRecord(
        title=title(offer), invocation=offer.proposal.invocation, line=offer.proposal.line,
        answers_code=answers.code if answers is not None else None,
        answers_span=answers.span if answers is not None else None,
        edits=tuple(EditRecord(e.line, e.column, e.end_line, e.end_column, e.text)
                    for e in offer.proposal.edits))


def title(offer: Offer) -> str:
    """`Apply pad-shared:array=tile,pad=1,banks=32: 1.72x, 375 µs -> 219 µs (verified)`:
    the refinement as `mcl apply` names it, the estimated gain and both times."""
    from mcl.feedback.emit import seconds_text

    head = f"Apply {offer.proposal.invocation}: "
    if offer.gain is None or offer.seconds_before is None or offer.seconds_after is None:
        return head + "no time estimate at this level (verified)"
    return (head + f"{offer.gain:.2f}x, {seconds_text(offer.seconds_before)} -> "
            f"{seconds_text(offer.seconds_after)} (verified)")


# ----------------------------------------------------------------------- the server side


def code_actions(uri: str, version: int, offers: Sequence[OfferRecord], asked: lsp.Range,
                 diagnostics: Sequence[lsp.Diagnostic]) -> list[lsp.CodeAction]:
    """The offers that act on the lines of `asked`, or answer a finding there, as code
    actions whose edit is tied to document `version` (a client applies it to that text
    only). One answering a finding is a quick fix of the diagnostics of that finding."""
    first, last = asked.start.line + 1, asked.end.line + 1
    out = []
    for offer in offers:
        span = offer.answers_span
        on_finding = span is not None and span.line <= last and span.end_line >= first
        if not on_finding and not first <= offer.line <= last:
            continue
        fixed = [d for d in diagnostics if offer.answers_code is not None
                 and d.code == offer.answers_code and span is not None
                 and d.range.start.line + 1 == span.line]
        edit = lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(
            lsp.OptionalVersionedTextDocumentIdentifier(uri, version),
            [lsp.TextEdit(_range(e), e.text) for e in offer.edits])])
        out.append(lsp.CodeAction(
            title=offer.title,
            kind=lsp.CodeActionKind.QuickFix if on_finding else lsp.CodeActionKind.RefactorRewrite,
            diagnostics=fixed or None, edit=edit))
    return out


def _range(edit: EditRecord) -> lsp.Range:
    return lsp.Range(lsp.Position(edit.line - 1, edit.column - 1),
                     lsp.Position(edit.end_line - 1, edit.end_column - 1))
