"""Integer intervals of MCPL index expressions: the smallest and largest value an
expression can take when every variable ranges over an interval.

Splitting a kernel across devices (`mcl.multi.split`) needs, per range of blocks, the
rows of each array the range may touch. The bounds are those of MCPL's interval domain
(`mcl.mcpl.intervals`, C's operators on ranges) walked by the language's one evaluator
(`mcl.mcpl.evaluate`); conditions around an access are not used, so a bound is never
smaller than the truth (a range may be given a row it does not read, never miss one).
What has no integer interval (floats, data read from arrays, calls that are not
monotone) is None: unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mcl.mcpl import ast
from mcl.mcpl import intervals as domain
from mcl.mcpl.evaluate import Evaluator, NotEvaluable
from mcl.mcpl.operators import OperatorError


@dataclass(frozen=True)
class IndexInterval:
    lo: int
    hi: int

    @staticmethod
    def point(value: int) -> IndexInterval:
        return IndexInterval(value, value)

    @property
    def is_point(self) -> bool:
        return self.lo == self.hi

    def clip(self, lo: int, hi: int) -> IndexInterval | None:
        """The part inside [lo, hi]; None when nothing is."""
        low, high = max(self.lo, lo), min(self.hi, hi)
        return IndexInterval(low, high) if low <= high else None


Env = Mapping[str, "IndexInterval | None"]


class _IndexRanges(Evaluator[domain.Interval, Env]):
    """Names take their interval from the environment; any other leaf has none."""

    def __init__(self) -> None:
        super().__init__(domain.IntervalValues())

    def name(self, e: ast.Name, env: Env) -> domain.Interval:
        known = env.get(e.name)
        if known is None:
            raise NotEvaluable(f"'{e.name}' has no interval")
        return domain.Interval(known.lo, known.hi)


def interval_of(e: ast.Expr | None, env: Env) -> IndexInterval | None:
    """The interval of integer expression `e` when its names range over `env`."""
    if e is None:
        return None
    try:
        found = _IndexRanges().value(e, env)
    except (NotEvaluable, OperatorError, RecursionError):
        return None
    if found.kind != "int":
        return None
    return IndexInterval(int(found.lo), int(found.hi))
