"""How far a run got towards its roof: the fraction of the attainable
performance (mcl.feedback.analyses.roofline) that a measured kernel time reached.

The roof belongs to the leaf the OpenCL was generated from: the program is translated
there (as code generation does) and the roofline of its function is taken at the run's
sizes. The fraction is the least time the roofs allow over the run's own median kernel
time — both count the same operations, so no reference's idea of the work enters it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcl.diagnostics import MclError

if TYPE_CHECKING:
    from mcl.mcpl.checked import CheckedProgram
    from mcl.mcpl.loader import Program


@dataclass(frozen=True)
class Attained:
    level: str  # the leaf whose roofs apply
    bound: str  # "compute" or the memory space of the lowest roof
    attainable: float  # flop/s at the lowest roof
    least_seconds: float  # the least time the roofs allow
    fraction: float  # least_seconds / the run's time

    @property
    def text(self) -> str:
        from mcl.feedback.analyses.roofline import describe_bound, percent, rate_text

        return (f"{percent(self.fraction)} of the attainable "
                f"{rate_text(self.attainable, 'FLOP/s')} "
                f"(roofline at {self.level}: bound by {describe_bound(self.bound)})")


def leaf_roofline(program: CheckedProgram | Program, function: str, leaf: str, library: Any,
                  memory_only: bool = False, values: Mapping[str, Any] | None = None) -> Any:
    """The Roofline of `function` of `program` translated to `leaf`, or None (no peak at
    the leaf, or the program cannot be translated or analysed there); with `memory_only`,
    a kernel without arithmetic gets its memory roofs (`roofline_of`), at the sizes
    `values` it will be evaluated at."""
    from mcl.feedback.analyses.roofline import roofline_of

    try:
        from mcl import pipeline

        lowered = pipeline.lower(pipeline.checked(program, library), leaf, library, function)
        found = lowered.main.function(function)
        return roofline_of(found, lowered, library.get(leaf), memory_only, values) \
            if found is not None else None
    except MclError:
        return None


def attained(roof: Any, sizes: Mapping[str, Any], seconds: float) -> Attained | None:
    """The fraction of `roof`'s attainable performance a run of `seconds` reached at
    `sizes`; None without a roof, sizes for every figure, or a time."""
    if roof is None:
        return None
    values = integer_sizes(sizes)
    fraction = roof.fraction(values, seconds)
    least, attainable, bound = roof.min_seconds(values), roof.attainable(values), \
        roof.bound(values)
    if fraction is None or least is None or attainable is None or bound is None:
        return None
    return Attained(roof.level, bound, attainable, least, fraction)


def run_attained(program: Program, function: str, leaf: str, library: Any,
                 sizes: Mapping[str, Any], seconds: float) -> Attained | None:
    """`attained` for a run of `function` generated from `leaf`."""
    if seconds <= 0:
        return None
    return attained(leaf_roofline(program, function, leaf, library,
                                  values=integer_sizes(sizes)), sizes, seconds)


def integer_sizes(sizes: Mapping[str, Any]) -> dict[str, int]:
    """The sizes of a run that are integers (the roofline's values)."""
    return {k: v for k, v in sizes.items() if isinstance(v, int) and not isinstance(v, bool)}
