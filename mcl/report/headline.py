"""Which feedback messages go into the table's feedback column.

Table II lists, per version, the feedback the programmer acts on — not every figure the
analyses compute. The column shows what `mcl check` shows by default
(mcl.feedback.render.visibility: every warning, the headline facts) with every suggestion
(the paper's Table II quotes the advice each version acted on, `use local memory`, whether
or not a refinement makes it or the model states its gain), less:
- the note that counts under an `if` are upper bounds and the roofline (`--run` gives
  each version's fraction of its roof in the performance column): the codes declared
  `LEFT_OUT` (mcl.feedback.codes, where every rule of this column is declared per code);
- repeats of a line (two accesses of `a` in the same loops say the same);
with the cache suggestions collapsed to the costliest loop per array (the most best-case
line fetches) and a count of the others.

A fact that is word for word the one of the row the version was made from is not repeated
in full: the row ends with one short line naming such facts, "(unchanged) …", so that a
row never looks as if a fact had gone. Transfers are the exception, as in the paper: they
appear at the first level with a host and where they change, and stay silent otherwise
(they belong to the kernel's parameters, which no refinement of the series changes).
`--all` shows every message.

The column reads the analyses' typed findings (mcl.feedback.findings): the operation
counts of an `OperationCounts`, the best case of a `LoopLineFetches`; a plain message is
taken as a plain finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcl.feedback.codes import COLLAPSED, LEFT_OUT, SILENT_WHEN_UNCHANGED, column, declared, title
from mcl.feedback.findings import Finding, LoopLineFetches, OperationCounts, finding_of, number
from mcl.feedback.messages import FeedbackSeverity, Message
from mcl.feedback.render.visibility import Visibility, array_of

if TYPE_CHECKING:
    from mcl.mcpl.loader import Program

__all__ = ["Headline", "array_of", "headline", "headline_messages", "left_out"]

UNCHANGED = "(unchanged)"
_HEAD_WIDTH = 40  # a longer head of a text is named by its code's title


@dataclass
class Headline:
    """One row's feedback column: its lines (the last one "(unchanged) …" when facts
    persist) and the full texts of the facts that line names."""

    lines: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


Feedback = Sequence[Finding | Message]


def headline(feedback: Feedback, previous: Feedback, program: Program | None,
             everything: bool = False) -> Headline:
    """The feedback column of one row; `previous` is the feedback of the row it was made
    from."""
    findings = [finding_of(item) for item in feedback]
    if everything:
        return Headline([f.message.text for f in findings])
    rule = Visibility(program)
    earlier = {(f.code, _short(f)) for f in map(finding_of, previous)}
    kept: list[Finding] = []
    unchanged: list[Message] = []
    for f in findings:
        m = f.message
        if not rule.shown(m, every_suggestion=True) or left_out(m):
            continue
        if m.severity != FeedbackSeverity.INFO or (m.code, _short(f)) not in earlier:
            kept.append(f)  # advice stays as long as it applies
        elif column(m.code) != SILENT_WHEN_UNCHANGED:
            unchanged.append(m)
    lines = list(dict.fromkeys(_collapse_cache(kept, rule)))  # one line per distinct text
    if unchanged:
        lines.append(_unchanged_line(unchanged, rule))
    return Headline(lines, list(dict.fromkeys(m.text for m in unchanged)))


def headline_messages(feedback: Feedback, previous: Feedback, program: Program | None,
                      everything: bool = False) -> list[str]:
    """The lines of one row's feedback column."""
    return headline(feedback, previous, program, everything).lines


def left_out(m: Message) -> bool:
    """Does the feedback column leave `m` out whatever it says (its code is declared
    `LEFT_OUT`)?"""
    return column(m.code) == LEFT_OUT


def _unchanged_line(messages: list[Message], rule: Visibility) -> str:
    """"(unchanged) #computational instructions; data reuse of a, b": each persisting fact
    by the head of its text (before the first colon), with the arrays of the reuse facts,
    so that the markdown table stays narrow."""
    subjects: dict[str, list[str]] = {}
    for m in messages:
        head = m.text.split(":")[0].strip()
        if len(head) > _HEAD_WIDTH:
            head = title(m.code, m.text)
        code = declared().get(m.code)
        array = rule.array_of(m) if code is not None and code.per_array else None
        found = subjects.setdefault(head, [])
        if array and array not in found:
            found.append(array)
    parts = [head + (f" of {', '.join(arrays)}" if arrays else "")
             for head, arrays in subjects.items()]
    return f"{UNCHANGED} " + "; ".join(parts)


def _short(f: Finding) -> str:
    """Operation statistics as Table II words them: instructions and data accesses."""
    if not isinstance(f, OperationCounts):
        return f.message.text
    from mcl.feedback.emit import show

    return (f"#computational instructions: {show(f.computational)}, "
            f"#data accesses: {show(f.data_accesses)}")


def _collapse_cache(findings: list[Finding], rule: Visibility) -> list[str]:
    """One cache message per (array, code): the loop with the most best-case fetches."""
    best: dict[tuple[str, str], Finding] = {}
    hidden: dict[tuple[str, str], int] = {}
    order: list[Finding | tuple[str, str]] = []
    for f in findings:
        if column(f.code) != COLLAPSED:
            order.append(f)
            continue
        key = (rule.array_of(f.message) or f.message.text, f.code)
        if key not in best:
            best[key] = f
            hidden[key] = 0
            order.append(key)
            continue
        hidden[key] += 1
        if _lines(f) > _lines(best[key]):
            best[key] = f
    lines = []
    for item in order:
        if isinstance(item, Finding):
            lines.append(_short(item))
        else:
            text = best[item].message.text
            if hidden[item]:
                text += f" [+{hidden[item]} more loops]"
            lines.append(text)
    return lines


def _lines(f: Finding) -> float:
    """The best-case line fetches of a loop's cache verdict (-1: none stated)."""
    fetches = number(f.best_lines) if isinstance(f, LoopLineFetches) else None
    return -1.0 if fetches is None else fetches
