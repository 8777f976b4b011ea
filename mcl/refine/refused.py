"""`Refused`: why a refinement is not made, in words. Its own module so that the text
edits below the refinements (mcl.refine.edits) can refuse a layout they cannot keep."""

from __future__ import annotations


class Refused(Exception):
    """A precondition of a refinement that does not hold, or cannot be shown: `reason`
    says which, in words."""

    def __init__(self, reason: str, line: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.line = line  # where the refinement would have acted, where known
