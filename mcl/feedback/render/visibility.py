"""Which feedback messages a report shows without being asked for everything: the one rule
behind `mcl check`'s default view (`-v` shows the rest), the `shown_by_default` field of
its JSON, the diagnostics the editor publishes, and `mcl report`'s feedback column
(mcl.report.headline, which leaves out a little more).

Shown by default: every warning; a suggestion only as a refinement with its estimated
gain: its finding proposes a change that some refinement answers (mcl.feedback.refinable,
told by the layers above: `Refinement.answers`) and the time model states the gain of that
change, the rewritten kernel's time against the original's, both named, at `MIN_GAIN` or
more (the other suggestions move to `-v`: one that states no gain, or that no refinement
can make, leaves the programmer to guess whether it pays); and the facts whose code is
declared a headline (`MessageCode.headline`, mcl.feedback.codes), a fact about one array
(`per_array`: data reuse) only for the kernel's parameters (a temporary's reuse is the
kernel's own bookkeeping; paper Table II quotes the inputs'). A message, fact or
suggestion, whose code nobody declared comes from a user's feedback function (paper 6.5)
and is shown: mcl cannot tell whether it matters. Everything else, e.g. the cache fact
of every array x loop pair, has nothing to act on and is hidden.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mcl.diagnostics import Span
from mcl.feedback.codes import declared
from mcl.feedback.findings import MIN_GAIN
from mcl.feedback.messages import FeedbackSeverity, Message
from mcl.feedback.refinable import answered

if TYPE_CHECKING:
    from mcl.mcpl.loader import Program


class Visibility:
    """The rule for the messages of one program (its parameters and array accesses are
    looked up once)."""

    def __init__(self, program: Program | None) -> None:
        self._arrays: dict[tuple[str, Span | None], str | None] = {}
        self.parameters: set[str] = set()
        self.answered = answered()
        if program is None:
            return
        from mcl.mcpl import ast

        for f in program.main.functions:
            self.parameters |= {p.name for p in f.params if isinstance(p.type, ast.ArrayType)}
            for node in ast.walk(f.body):
                if isinstance(node, ast.Index) and node.span is not None:
                    name: str | None = ast.root_name(node)
                    self._arrays.setdefault((f.name, node.span), name)

    def array_of(self, m: Message) -> str | None:
        """The array a message is about: the root of the indexed expression at its span."""
        return None if m.span is None else self._arrays.get((m.function, m.span))

    def shown(self, m: Message, change: object = None, every_suggestion: bool = False
              ) -> bool:
        """Does the default view show `m`, whose finding proposes `change` (a
        ProposedChange, or None)? `every_suggestion`: each suggestion is shown, as a
        series' Table II quotes the advice each version acted on (mcl.report.headline)."""
        code = declared().get(m.code)
        if code is None:
            return True  # a user's feedback function's: mcl cannot tell whether it matters
        if m.severity == FeedbackSeverity.SUGGESTION:
            return every_suggestion or self.refinement_with_gain(m, change)
        if m.severity != FeedbackSeverity.INFO:
            return True
        if not code.headline:
            return False
        return not code.per_array or self.array_of(m) in self.parameters


    def refinement_with_gain(self, m: Message, change: object) -> bool:
        """Is suggestion `m` one a refinement makes (`change`'s type is answered), with
        the time model's gain of at least MIN_GAIN stated?"""
        gain = m.value_map.get("estimated_gain")
        return (change is not None and type(change).__name__ in self.answered
                and gain is not None and gain.numeric is not None
                and float(gain.numeric) >= MIN_GAIN)


def shown_by_default(messages: Sequence[Message], program: Program | None,
                     changes: Sequence[object] | None = None) -> list[bool]:
    """For each message (whose finding proposes the change of the same place in
    `changes`; none given: no change): does a report show it without `-v`?"""
    rule = Visibility(program)
    proposed = changes if changes is not None else [None] * len(messages)
    return [rule.shown(m, c) for m, c in zip(messages, proposed, strict=True)]


def array_of(m: Message, program: Program | None) -> str | None:
    """The array message `m` is about, in `program`."""
    return Visibility(program).array_of(m)
