"""The iteration points of a few loops, visited with the evaluator standing at each.

The lock-step analyses (bank conflicts as the data decide them or as the subscripts
do, divergence, merged 64-bit pairs) judge an access at every combination of the
iterations of the loops its address moves with (the paper's section 6.5: numbers from
the program, computed on demand). Each walks those points the same way: set every
loop's position, read what it needs, and put the loops back at their first iteration
afterwards — also when the walk ends early or raises, because the evaluator is shared by
every later analysis of the kernel."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcl.feedback.facts.kernel import Loop
    from mcl.feedback.kernel_api import NumericEvaluator


class LoopPoints:
    """`with LoopPoints(ev, loops) as points: for point in points: ...` — each point a
    tuple of positions (the last loop fastest), with `ev` placed there; `len(points)` is
    their number. The loops are back at position 0 when the `with` block ends."""

    def __init__(self, ev: NumericEvaluator, loops: Sequence[Loop]) -> None:
        self.ev = ev
        self.loops = tuple(loops)
        self.counts = tuple(ev.trips(loop) for loop in self.loops)

    def __len__(self) -> int:
        return math.prod(self.counts)

    def __enter__(self) -> LoopPoints:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        for loop in self.loops:
            self.ev.set_position(loop, 0)

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        for point in itertools.product(*(range(count) for count in self.counts)):
            for loop, position in zip(self.loops, point, strict=True):
                self.ev.set_position(loop, position)
            yield point

    def values(self, kernel: Any) -> tuple[int, ...]:
        """The loop variables' values at the current point (a loop may start or step
        other than 0 and 1)."""
        shape = kernel.facts.evaluator.shape
        return tuple(int(self.ev.number(shape(loop).value)) for loop in self.loops)
