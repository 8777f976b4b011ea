"""Units beyond a par_group's limit: a warning, never silence.

A par_group with a finite count (`max_nr_units = 65535` blocks at fermi, 1024 threads per
block at gpu) bounds how many units one foreach, or the foreach statements over the same
group directly nested in it (Fig. 2's `i` and `j`), may run inside one enclosing unit --
for the outermost group, the grid, each foreach of such a nest alone: it bounds each grid
dimension (`UnitLimit.per_dimension`); the
interpreter refuses a run that asks for more (`mcl.translate.unit_limits`). When the values
given with `-D` make the count of such a foreach exceed the bound, the kernel cannot run
on the description's hardware as written: this analysis says so before anything runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcl.feedback.analysis import AnalysisContext
from mcl.feedback.emit import Emitter
from mcl.feedback.facts.counting import iterations
from mcl.feedback.facts.kernel import Loop
from mcl.feedback.findings import Finding
from mcl.feedback.message_code import MessageCode
from mcl.feedback.messages import FeedbackSeverity, Message
from mcl.feedback.values import evaluate

if TYPE_CHECKING:
    from mcl.hdl.model import HardwareDescription


# The codes of this analysis (mcl.feedback.codes; the catalogue is docs/feedback.md).
DOCS = "units-beyond-a-par_groups-limit-unit_counts"  # its section of docs/feedback.md
MESSAGE_CODES = (
    MessageCode("units-over-limit", "more units than the par_group allows",
                (FeedbackSeverity.WARNING,), DOCS),
)


def has_unit_limits(hwd: HardwareDescription) -> bool:
    from mcl.translate.unit_limits import unit_limit

    return any(unit_limit(hwd, g.name) is not None for g in hwd.par_groups())


def units_over_limit(ctx: AnalysisContext) -> list[Finding]:
    """Warn where a foreach runs more units of a par_group than the description allows."""
    from mcl.translate.unit_limits import unit_limit

    hwd, facts, values = ctx.hwd, ctx.facts, ctx.values
    emit = Emitter(facts, "unit_counts", values)
    foreach = [loop for loop in facts.loops if loop.kind == "foreach"]
    out: list[Message] = []
    reported: set[Loop] = set()
    for loop in foreach:
        if any(_same_group_child(x, loop) for x in foreach):
            continue  # the innermost of a nest over one group measures the whole nest
        limit = unit_limit(hwd, loop.group or "")
        if limit is None or _nest(loop)[0] in reported:
            continue
        # A grid's bound holds per dimension: each foreach of the nest alone.
        nests = [[x] for x in _nest(loop)] if limit.per_dimension else [_nest(loop)]
        over = [(nest, units, exact) for nest in nests
                for units, exact in [iterations(facts.evaluator, nest)]
                if (count := evaluate(units, values).numeric) is not None
                and count > limit.limit]
        if not over:
            continue
        reported.add(_nest(loop)[0])
        nest, units, exact = over[0]
        where = limit.where.replace("'", "")
        bound = "exactly" if limit.exact else "at most"
        names = " and ".join(f"{x.name}" for x in nest)
        out.append(emit.message(
            "units-over-limit", FeedbackSeverity.WARNING,
            f"foreach {names} runs {{units}} units of '{limit.group}', but {hwd.name} allows "
            f"{bound} {{limit}} {where} ({limit.path}): the kernel cannot run as written",
            nest[0].span, {"units": units, "limit": limit.limit}, tuple(nest),
            approximate=not exact,
            hint=f"split the work over an enclosing par_group or a for-loop, so that at most "
                 f"{limit.limit:,} units of '{limit.group}' run {where}"))
    return [Finding(m) for m in out]  # nothing reads them by type: plain findings


def _same_group_child(inner: Any, outer: Any) -> bool:
    return bool(inner.parents) and inner.parents[-1] is outer and inner.group == outer.group


def _nest(loop: Any) -> list[Any]:
    """`loop` and the foreach statements over its group that directly enclose it,
    outermost first."""
    nest = [loop]
    while nest[0].parents and nest[0].parents[-1].kind == "foreach" \
            and nest[0].parents[-1].group == loop.group:
        nest.insert(0, nest[0].parents[-1])
    return nest

