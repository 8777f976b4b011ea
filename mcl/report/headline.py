"""Which feedback messages go into the table's feedback column.

Table II lists, per version, the feedback the programmer acts on — not every figure the
analyses compute. The column shows what `mcl check` shows by default
(mcl.feedback.render.visibility: every warning and suggestion, the headline facts), less:
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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcl.feedback.codes import COLLAPSED, LEFT_OUT, SILENT_WHEN_UNCHANGED, column, declared, title
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


def headline(messages: list[Message], previous: list[Message], program: Program | None,
             everything: bool = False) -> Headline:
    """The feedback column of one row; `previous` are the messages of the row it was made
    from."""
    if everything:
        return Headline([m.text for m in messages])
    rule = Visibility(program)
    earlier = {(m.code, _short(m)) for m in previous}
    kept: list[Message] = []
    unchanged: list[Message] = []
    for m in messages:
        if not rule.shown(m) or left_out(m):
            continue
        if m.severity != FeedbackSeverity.INFO or (m.code, _short(m)) not in earlier:
            kept.append(m)  # advice stays as long as it applies
        elif column(m.code) != SILENT_WHEN_UNCHANGED:
            unchanged.append(m)
    lines = list(dict.fromkeys(_collapse_cache(kept, rule)))  # one line per distinct text
    if unchanged:
        lines.append(_unchanged_line(unchanged, rule))
    return Headline(lines, list(dict.fromkeys(m.text for m in unchanged)))


def headline_messages(messages: list[Message], previous: list[Message], program: Program | None,
                      everything: bool = False) -> list[str]:
    """The lines of one row's feedback column."""
    return headline(messages, previous, program, everything).lines


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


def _short(m: Message) -> str:
    """Operation statistics as Table II words them: instructions and data accesses."""
    if m.code != "opstats-summary":
        return m.text
    from mcl.feedback.emit import show

    figures = m.value_map
    if "computational" not in figures or "data_accesses" not in figures:
        return m.text
    return (f"#computational instructions: {show(figures['computational'])}, "
            f"#data accesses: {show(figures['data_accesses'])}")


def _collapse_cache(messages: list[Message], rule: Visibility) -> list[str]:
    """One cache message per (array, code): the loop with the most best-case fetches."""
    best: dict[tuple[str, str], Message] = {}
    hidden: dict[tuple[str, str], int] = {}
    order: list[Message | tuple[str, str]] = []
    for m in messages:
        if column(m.code) != COLLAPSED:
            order.append(m)
            continue
        key = (rule.array_of(m) or m.text, m.code)
        if key not in best:
            best[key] = m
            hidden[key] = 0
            order.append(key)
            continue
        hidden[key] += 1
        if _lines(m) > _lines(best[key]):
            best[key] = m
    lines = []
    for item in order:
        if isinstance(item, Message):
            lines.append(_short(item))
        else:
            text = best[item].text
            if hidden[item]:
                text += f" [+{hidden[item]} more loops]"
            lines.append(text)
    return lines


def _lines(m: Message) -> float:
    value = m.value_map.get("best_lines")
    return float(value.numeric) if value is not None and value.numeric is not None else -1.0
