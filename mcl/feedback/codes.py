"""The stable message codes: each declared once, by the module that emits it, as a
`MessageCode` (title, severities, whether a report shows it by default, how `mcl report`'s
feedback column treats it, and its section of the catalogue, docs/feedback.md). This
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
from dataclasses import dataclass
from functools import cache

from mcl.feedback.messages import Severity

# How `mcl report`'s feedback column (mcl.report.headline) treats a code's messages.
IN_COLUMN = "in the column"
LEFT_OUT = "left out"  # the note that counts are upper bounds; the roofline (--run has it)
SILENT_WHEN_UNCHANGED = "silent when unchanged"  # transfers: only where they change
COLLAPSED = "collapsed"  # cache advice: the costliest loop per array, and a count


@dataclass(frozen=True)
class MessageCode:
    """One message code as the module that emits it declares it."""

    code: str
    title: str  # the summary's name for it
    severities: tuple[Severity, ...]  # what it is emitted as, the usual one first
    anchor: str  # the heading of its section in docs/feedback.md, as a link anchor
    # An info fact a programmer reads first, as the paper's Table II quotes them (shown
    # without -v); the other facts (every array x loop cache fact, per-parameter
    # transfers, ...) have nothing to act on.
    headline: bool = False
    # A fact about one array: a headline only for the kernel's parameters (a temporary's
    # reuse is the kernel's own bookkeeping; Table II quotes the inputs'), and named by
    # its array where a report's column says it is unchanged.
    per_array: bool = False
    column: str = IN_COLUMN


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
