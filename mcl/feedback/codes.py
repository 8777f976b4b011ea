"""The catalogue of the stable message codes: each declared once, by the module that
emits it (or by its findings record type, mcl.feedback.findings), as a
`mcl.feedback.message_code.MessageCode` (title, severities, whether a report shows it by
default, how `mcl report`'s feedback column treats it, and its section of the catalogue,
docs/feedback.md). This
module gathers the declarations; the titles of a report's summary, the rule of what a
report shows without `-v` (mcl.feedback.render.visibility) and the rules of the feedback
column (mcl.report.headline) are all read from them.

A report opens with a summary of what to act on: the warnings and suggestions, one line
per code with its title and the places it is about ("compute several elements per unit:
c[i, j] (line 13)"). A code nobody declared (a user's feedback function) is summarised by
the start of its message.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from mcl.feedback.message_code import (
    COLLAPSED,
    IN_COLUMN,
    LEFT_OUT,
    SILENT_WHEN_UNCHANGED,
    MessageCode,
)

__all__ = ["COLLAPSED", "IN_COLUMN", "LEFT_OUT", "SILENT_WHEN_UNCHANGED", "MessageCode",
           "column", "declared", "title"]


@cache
def declared() -> Mapping[str, MessageCode]:
    """Every declared code, by name: the engine's own and those of every analysis (the
    `codes` of its `Analysis` record, which the analysis module declares). A code is
    declared once (tests/feedback/test_report.py); should an installed package declare a
    built-in code again, the built-in declaration stands."""
    from mcl.feedback import registry

    found: dict[str, MessageCode] = {}
    sources = [*registry.MESSAGE_CODES, *(c for a in registry.analyses() for c in a.codes)]
    for c in sources:
        found.setdefault(c.code, c)  # the engine's and the built-in ones first
    return found


def title(code: str, text: str = "") -> str:
    """The title of `code`, or the start of the message text for a code of its own."""
    known = declared().get(code)
    if known is not None:
        return known.title
    head = text.split(":")[0].strip()
    return head if len(head) <= 60 else head[:57] + "..."


def column(code: str) -> str:
    """How `mcl report`'s feedback column treats the messages of `code`."""
    known = declared().get(code)
    return known.column if known is not None else IN_COLUMN
