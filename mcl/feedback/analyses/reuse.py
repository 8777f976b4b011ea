"""Data reuse (paper section 6.3; feedback.md analysis 3): a message for each read whose
elements are loaded more than once, from the findings of mcl.feedback.facts.reuse (the
simple form, the loops a read does not depend on, and the advanced form, the reuse ratio).
"""

from __future__ import annotations

from mcl.feedback.analysis import AnalysisContext
from mcl.feedback.emit import Emitter, conjunction, expr_text, loop_text
from mcl.feedback.facts.reuse import (
    LoopReuse,
    NeighbourReuse,
    RatioReuse,
    ReuseFacts,
    Unpredictable,
    neighbour_reuse,
    register_hint,
    unknown_finding,
)
from mcl.feedback.findings import Finding
from mcl.feedback.message_code import MessageCode
from mcl.feedback.messages import FeedbackSeverity, Message

# The codes of this analysis (mcl.feedback.codes; the catalogue is docs/feedback.md).
DOCS = "data-reuse-reuse-paper-63"  # its section of docs/feedback.md
MESSAGE_CODES = (
    MessageCode("reuse-independent", "data reuse",
                (FeedbackSeverity.INFO,), DOCS, headline=True, per_array=True),
    MessageCode("reuse-ratio", "data reuse ratio",
                (FeedbackSeverity.INFO,), DOCS, headline=True, per_array=True),
    MessageCode("reuse-unpredictable", "data reuse unknown", (FeedbackSeverity.INFO,), DOCS),
    MessageCode("reuse-neighbours", "data reuse between neighbouring accesses",
                (FeedbackSeverity.INFO,), DOCS, headline=True, per_array=True),
)


# ----------------------------------------------------------------------------- messages



def data_reuse(ctx: AnalysisContext) -> list[Finding]:
    """Reads whose elements are loaded more than once."""
    facts = ctx.facts
    emit = Emitter(facts, "reuse", ctx.values)
    ev = facts.evaluator
    out: list[Message] = []
    for finding in ctx.get(ReuseFacts).findings:
        acc = finding.access
        text = expr_text(acc.node)
        span = acc.node.span
        loops = acc.item.loops
        match finding:
            case LoopReuse():
                names = [x.name for x in finding.independent]
                figures = {"reuse": finding.reuse}
                figures.update({f"iterations_{x.name}": ev.trips(x) for x in finding.independent})
                serial = [x for x in finding.independent if x.kind == "for"]
                hint = register_hint(ev, acc, serial) if serial else None
                either = "either" if len(names) == 2 else "any"
                dependence = (f"does not depend on {names[0]}" if len(names) == 1
                              else f"does not depend on {either} of {conjunction(names)}")
                loops_text = conjunction([loop_text(ev, x, f"iterations_{x.name}")
                                           for x in finding.independent])
                out.append(emit.message(
                    "reuse-independent", FeedbackSeverity.INFO,
                    f"data reuse: {text} is accessed for {loops_text} but "
                    f"{dependence}: every element is loaded {{reuse}} times",
                    span, figures, loops, approximate=not finding.exact, hint=hint))
            case RatioReuse():
                if finding.loads_once(ctx.values):
                    continue  # every element loaded once at these sizes: nothing to tile
                figures = {"ratio": finding.ratio, "accesses": finding.accesses,
                           "distinct": finding.distinct}
                where = ("over all dimensions" if finding.dimension is None
                         else f"in dimension {finding.dimension + 1}")
                over = conjunction([x.name for x in finding.loops])
                out.append(emit.message(
                    "reuse-ratio", FeedbackSeverity.INFO,
                    f"data reuse of {text} {where}: {{accesses:access|accesses}} over loops "
                    f"{over} touch {{distinct:distinct element|distinct elements}}, a reuse "
                    "ratio of {ratio}",
                    span, figures, loops, approximate=not finding.exact,
                    hint="neighbouring units or iterations load the same elements: tile these "
                         "loops and keep a tile in a faster memory, or in registers"))
            case Unpredictable():
                why = finding.reason or (f"the index of {text} is not an affine function of "
                                         "the loop variables")
                out.append(emit.message(
                    "reuse-unpredictable", FeedbackSeverity.INFO,
                    f"{why}: the data reuse of {text} cannot be determined statically",
                    span, None, loops))
            case _:
                unknown_finding(finding)
    out += [_neighbours(emit, group) for group in neighbour_reuse(facts)]
    return [Finding(m) for m in out]  # nothing reads them by type: plain findings


def _neighbours(emit: Emitter, group: NeighbourReuse) -> Message:
    """A stencil's reads of one array a constant apart: every element is loaded by each
    of them whose offset reaches it, the reuse a single access's ratio does not show."""
    acc = group.access
    names = conjunction([expr_text(a.node) for a in group.accesses])
    dims_text = conjunction([f"{spread + 1} in dimension {d + 1}"
                             for d, spread in enumerate(group.spread) if spread])
    return emit.message(
        "reuse-neighbours", FeedbackSeverity.INFO,
        f"data reuse between neighbouring accesses: {names} read the same elements for "
        f"neighbouring units or iterations, a window of {dims_text}: each element is "
        "loaded by up to {accesses} of them",
        acc.node.span, {"accesses": len(group.accesses)}, acc.item.loops,
        hint="load each element once: into a faster memory the neighbouring units share "
             "(a tile with its halo), or into registers that neighbouring iterations pass "
             "on")

