"""Code lens: above each function, the time the model estimates for it at the level the
feedback ran at (docs/feedback.md, "Time estimate"), read from the feedback the server
already has for the document: no analysis of its own, so nothing runs per keystroke,
and a function without an estimate (a level without a time model, an edit not yet
analysed) gets no lens. The estimate is the typed finding's (mcl.feedback.findings'
`TimeEstimate`, sent by the worker as an `EstimateRecord`), never read back out of the
message's text, so a change of wording cannot break the lens."""

from __future__ import annotations

from typing import Any

from lsprotocol import types as lsp

from mcl.lsp.convert import to_range
from mcl.lsp.worker import EstimateRecord, MessageRecord
from mcl.mcpl import ast
from mcl.mcpl.positions import head


def feedback_level(library: Any, own: str, level: str | None) -> str:
    """The level a function of description `own` got its feedback at: `level`
    (`mcl.level`), unless `own` is already at or below it (the worker then analyses the
    kernel at its own level, mcl.lsp.worker)."""
    if level is None:
        return own
    if library is not None and own in library and level in library.get(own).lineage:
        return own
    return level


def lens_title(estimate: EstimateRecord, level: str) -> str:
    """`estimated 585 µs at hopper, limited by the SM (...)`; where the counts cannot
    decide an `if`, the range between its smaller and its larger branch in every unit
    (the limit is the larger's)."""
    time = estimate.time if estimate.least is None else f"{estimate.least} to {estimate.time}"
    return f"estimated {time} at {level}, limited by {estimate.limit}"


def code_lenses(module: ast.Module, feedback: list[MessageRecord], library: Any,
                level: str | None) -> list[lsp.CodeLens]:
    out = []
    for function in module.functions:
        estimate = next((m.estimate for m in feedback
                         if m.estimate is not None and m.function == function.name), None)
        if estimate is None or function.span is None:
            continue
        title = lens_title(estimate, feedback_level(library, function.hwd, level))
        out.append(lsp.CodeLens(to_range(head(function.span, len(function.hwd))),
                                lsp.Command(title, "")))
    return out
