"""What a message code is: the `MessageCode` record an analysis (or a findings record
type, mcl.feedback.findings) declares for each code it emits, and how `mcl report`'s
feedback column treats a code's messages. `mcl.feedback.codes` gathers the declarations
of every analysis; this module is below every analysis, so declaring a code imports
nothing of the engine (docs/architecture.md, "Feedback in layers")."""

from __future__ import annotations

from dataclasses import dataclass

from mcl.feedback.messages import FeedbackSeverity

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
    severities: tuple[FeedbackSeverity, ...]  # what it is emitted as, the usual one first
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
