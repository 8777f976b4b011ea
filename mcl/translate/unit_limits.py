"""How many units a foreach may run: the count of its par_group in the hardware description.

A par_group states `nr_units` or `max_nr_units` (hdl.md §3.1); gpu allows at most 1024
`threads` per `block`. A kernel that asks for more is wrong on the device (OpenCL refuses
the work-group size, or the launch fails), so the oracle must not accept it either. The
units of a par_group inside one enclosing unit are those of one *root* foreach and the
foreach statements over the same group directly nested in it (Fig. 2's `i` and `j` are
one 2-D set of threads), so the limit applies to the product of their counts; the
outermost group's (the grid's blocks) applies to each dimension, each foreach alone
(`UnitLimit.per_dimension`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mcl.diagnostics import MclError, Span, error
from mcl.hdl.model import HardwareDescription, ParUnit
from mcl.translate.counts import count_constant


@dataclass(frozen=True)
class UnitLimit:
    """The most units of par_group `group` inside one unit of `per` (None: at the top)."""

    group: str
    limit: int
    path: str  # the description constant that states it, e.g. gpu.hierarchy....max_nr_units
    per: str | None
    exact: bool

    @property
    def per_dimension(self) -> bool:
        """Does the bound hold for each foreach of a nest alone? For the outermost
        par_group, the grid: a launch spreads a nest of foreach statements over it across
        the grid's dimensions, one each, and the hardware bounds each dimension (fermi:
        "at most 65535 blocks per grid dimension", CUDA cc 2.0), not their product. An
        inner group's bound is on all its units in one enclosing unit (1,024 threads per
        block)."""
        return self.per is None

    @property
    def where(self) -> str:
        """Where the bound holds, in words: `per 'block'`, `in each grid dimension`."""
        if self.per:
            return f"per '{self.per}'"
        return "in each grid dimension" if self.per_dimension else "in all"

    def check(self, outer: int, count: int, span: Span | None) -> int:
        """The units of the group once a foreach with `count` runs inside `outer` units of
        the same group (1 for a root foreach); an error when that exceeds the limit (the
        foreach's own count where the limit holds `per_dimension`)."""
        total = outer * count
        if (count if self.per_dimension else total) <= self.limit:
            return total
        where = self.where
        hwd = self.path.split(".")[0]
        asked = f"{count}" if outer == 1 or self.per_dimension else \
            f"{outer} x {count} = {total}"
        bound = "exactly" if self.exact else "at most"
        what = "this foreach runs" if outer == 1 or self.per_dimension else (
            f"the nested foreach statements over '{self.group}' run"
        )
        raise MclError(
            error(
                "interp-foreach-count",
                f"{what} {asked} units of '{self.group}', but {hwd} allows {bound} "
                f"{self.limit} {where} ({self.path})",
                span,
                hint=f"use at most {self.limit} units of '{self.group}' {where} and spread the "
                "rest over an enclosing par_group (the translation reads this bound from "
                "the description)",
            )
        )


def unit_limit(hwd: HardwareDescription | None, group: str) -> UnitLimit | None:
    """The limit on `group`'s units, or None when it is unlimited or unknown."""
    if hwd is None:
        return None
    pg = hwd.par_group(group)
    if pg is None or pg.count is None or not math.isfinite(pg.count):
        return None
    path = ".".join(count_constant(hwd, pg).path)
    per = pg.parent.name if isinstance(pg.parent, ParUnit) else None
    return UnitLimit(group, int(pg.count), path, per, pg.exact)
