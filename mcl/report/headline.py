"""Which feedback messages go into the table's feedback column.

Table II lists, per version, the feedback the programmer acts on — not every figure the
analyses compute. The engine reports much more (every access in every loop for the
caches), so the column keeps:
- every suggestion (the actionable messages), with the cache messages collapsed to the
  costliest loop per array (the most best-case line fetches) and a count of the others;
- the facts Table II quotes: operation counts, transfers, coalescing/bank conflicts,
  occupancy, and data reuse of the kernel's parameters (not of its temporaries);
- warnings, except the note that counts under an `if` are upper bounds;
and drops a fact that is word for word the one of the previous row (transfers appear at
the first level with a host and stay silent after, as in the paper), and repeats of a
line (two accesses of `a` in the same loops say the same).
`--all` shows every message.
"""

from __future__ import annotations

from typing import Any

from mcl.feedback.messages import Message, Severity

FACTS = frozenset({
    "opstats-summary", "transfers-total", "reuse-independent", "reuse-ratio",
    "memory-access-optimal", "occupancy", "shared-mem-parallelism",
})
QUIET_WARNINGS = frozenset({"opstats-approximate"})
CACHE_COLLAPSED = frozenset({"cache-no-benefit", "cache-may-benefit", "cache-unpredictable"})
REUSE = frozenset({"reuse-independent", "reuse-ratio"})


def headline_messages(messages: list[Message], previous: list[Message], program: Any,
                      everything: bool = False) -> list[str]:
    """The lines of one row's feedback column; `previous` are the messages of the row it
    was made from."""
    if everything:
        return [m.text for m in messages]
    parameters = _parameter_arrays(program)
    earlier = {(m.code, _short(m)) for m in previous}
    kept: list[Message] = []
    for m in messages:
        if m.severity == Severity.SUGGESTION:
            kept.append(m)
        elif m.severity == Severity.WARNING:
            if m.code not in QUIET_WARNINGS:
                kept.append(m)
        elif m.code in FACTS:
            if m.code in REUSE and array_of(m, program) not in parameters:
                continue
            if (m.code, _short(m)) not in earlier:
                kept.append(m)
    return list(dict.fromkeys(_collapse_cache(kept, program)))  # one line per distinct text


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


def _collapse_cache(messages: list[Message], program: Any) -> list[str]:
    """One cache message per (array, code): the loop with the most best-case fetches."""
    best: dict[tuple[str, str], Message] = {}
    hidden: dict[tuple[str, str], int] = {}
    order: list[Message | tuple[str, str]] = []
    for m in messages:
        if m.code not in CACHE_COLLAPSED:
            order.append(m)
            continue
        key = (array_of(m, program) or m.text, m.code)
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


def _parameter_arrays(program: Any) -> set[str]:
    if program is None:
        return set()
    from mcl.mcpl import ast

    return {p.name for f in program.main.functions for p in f.params
            if isinstance(p.type, ast.ArrayType)}


def array_of(m: Message, program: Any) -> str | None:
    """The array a message is about: the root of the indexed expression at its span."""
    if program is None or m.span is None:
        return None
    from mcl.mcpl import ast

    for f in program.main.functions:
        if f.name != m.function:
            continue
        for node in ast.walk(f.body):
            if isinstance(node, ast.Index) and node.span == m.span:
                return ast.root_name(node)
    return None
