"""Which feedback messages a report shows without being asked for everything: the one rule
behind `mcl check`'s default view (`-v` shows the rest), the `shown_by_default` field of
its JSON, the diagnostics the editor publishes, and `mcl report`'s feedback column
(mcl.report.headline, which leaves out a little more).

Shown by default: every warning and suggestion, and the facts whose code is declared a
headline (`MessageCode.headline`, mcl.feedback.codes), a fact about one array
(`per_array`: data reuse) only for the kernel's parameters (a temporary's reuse is the
kernel's own bookkeeping; paper Table II quotes the inputs'). A fact whose code nobody
declared comes from a user's feedback function (paper 6.5) and is shown: mcl cannot tell
whether it matters. Everything else, e.g. the cache fact of every array x loop pair, has
nothing to act on and is hidden.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mcl.diagnostics import Span
from mcl.feedback.codes import declared
from mcl.feedback.messages import FeedbackSeverity, Message

if TYPE_CHECKING:
    from mcl.mcpl.loader import Program


class Visibility:
    """The rule for the messages of one program (its parameters and array accesses are
    looked up once)."""

    def __init__(self, program: Program | None) -> None:
        self._arrays: dict[tuple[str, Span | None], str | None] = {}
        self.parameters: set[str] = set()
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

    def shown(self, m: Message) -> bool:
        code = declared().get(m.code)
        if m.severity != FeedbackSeverity.INFO or code is None:
            return True
        if not code.headline:
            return False
        return not code.per_array or self.array_of(m) in self.parameters


def shown_by_default(messages: Sequence[Message], program: Program | None) -> list[bool]:
    """For each message: does a report show it without `-v`?"""
    rule = Visibility(program)
    return [rule.shown(m) for m in messages]


def array_of(m: Message, program: Program | None) -> str | None:
    """The array message `m` is about, in `program`."""
    return Visibility(program).array_of(m)
