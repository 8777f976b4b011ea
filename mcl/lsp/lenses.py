"""Code lens: above each function, the time the model estimates for it at the level the
feedback ran at (docs/feedback.md, "Time estimate"), read from the feedback the server
already has for the document: no analysis of its own, so nothing runs per keystroke,
and a function without an estimate (a level without a time model, an edit not yet
analysed) gets no lens."""

from __future__ import annotations

import re
from typing import Any

from lsprotocol import types as lsp

from mcl.lsp.convert import to_range
from mcl.lsp.worker import MessageRecord
from mcl.mcpl import ast
from mcl.mcpl.positions import head

TIME_ESTIMATE = "time-estimate"
# "time estimate[ at an SM clock of ...]: 583 µs over ..., limited by the SM (...): the
# launch 2.5 µs before the work, device memory ..."
_ESTIMATE = re.compile(r"time estimate[^:]*: (?P<time>[^ ,]+ [^ ,]+)")
_LIMIT = re.compile(r"limited by (?P<limit>.+?): (?:the launch|device memory)")


def feedback_level(library: Any, own: str, level: str | None) -> str:
    """The level a function of description `own` got its feedback at: `level`
    (`mcl.level`), unless `own` is already at or below it (the worker then analyses the
    kernel at its own level, mcl.lsp.worker)."""
    if level is None:
        return own
    if library is not None and own in library and level in library.get(own).lineage:
        return own
    return level


def code_lenses(module: ast.Module, feedback: list[MessageRecord], library: Any,
                level: str | None) -> list[lsp.CodeLens]:
    out = []
    for function in module.functions:
        record = next((m for m in feedback if m.code == TIME_ESTIMATE
                       and m.function == function.name), None)
        found = _ESTIMATE.match(record.text) if record is not None else None
        if found is None or function.span is None:
            continue
        limit = _LIMIT.search(record.text) if record is not None else None
        at = feedback_level(library, function.hwd, level)
        title = f"estimated {found.group('time')} at {at}"
        if limit is not None:
            title += f", limited by {limit.group('limit')}"
        out.append(lsp.CodeLens(to_range(head(function.span, len(function.hwd))),
                                lsp.Command(title, "")))
    return out
