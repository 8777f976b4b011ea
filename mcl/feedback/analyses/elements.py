"""Several elements per unit (paper section 5: gpu message (3), mic; feedback.md
analysis 5), a fact shown with `-v`: it states no gain.

"It may be beneficial to consider computing more than one element of c per thread." The
advice applies when the kernel launches more units than the description keeps resident
(`mcl.feedback.facts.resident`: the slots of its outermost execution units, fermi's 15 SMs x 48
warps x 32 threads, not the 480 ALUs that execute some of them in one cycle) and each
unit writes a single output element of its own (its store is inside foreach statements
only, not in a for-loop, and its subscripts depend on every one of them: a warp that
reduces a row into one element shares it). Where the description's slots are unlimited
(perfect, accelerator) the analysis does not run at all.

A store whose address depends on data (`atomicAdd(hist[image[i, j]], 1)`) is no output
element of its unit: many units update the same few addresses, and the irregular analysis
says so (store-contention, with privatisation as the cure: store-privatise), so this
analysis leaves such stores to it.
"""

from __future__ import annotations

from typing import Any

from mcl.feedback.analysis import AnalysisContext
from mcl.feedback.emit import Emitter, expr_text
from mcl.feedback.facts.blocks import OUTPUT, classify
from mcl.feedback.facts.contention import contended
from mcl.feedback.facts.counting import iterations
from mcl.feedback.facts.kernel import Loop
from mcl.feedback.facts.resident import resident_units
from mcl.feedback.findings import (
    AccessPlace,
    ComputeSeveralElements,
    Finding,
    LoopPlace,
    SeveralElementsProposal,
    code_of,
    declaration,
)
from mcl.feedback.messages import FeedbackSeverity
from mcl.feedback.values import evaluate
from mcl.mcpl import ast

# The code of this analysis, as its record type declares it (mcl.feedback.findings; the
# catalogue is docs/feedback.md).
MESSAGE_CODES = (
    declaration(SeveralElementsProposal),
)


def several_elements(ctx: AnalysisContext) -> list[Finding]:
    """Suggest computing more than one output element per executing unit."""
    hwd, facts, values = ctx.hwd, ctx.facts, ctx.values
    emit = Emitter(facts, "elements", values)
    ev = facts.evaluator
    kinds = classify(facts)
    unit = hwd.executing_unit().name
    resident = resident_units(hwd)
    capacity = resident.units
    outputs = {p.name for p in facts.params if "w" in facts.param_modes.get(p.name, "")}
    stores = [a for a in facts.accesses
              if a.writes and a.binding.root.name in outputs and a.binding.root.kind == "param"
              and kinds[a.item] == OUTPUT and not contended(facts, a, values)
              and not _shared_element(facts, a)]
    if not stores or any(not _one_per_unit(a.item.loops) for a in stores):
        return []
    out: list[Finding] = []
    seen: set[str] = set()
    for acc in stores:
        name = acc.binding.root.name
        foreach = [x for x in acc.item.loops if x.kind == "foreach"]
        if name in seen or not foreach:
            continue
        seen.add(name)
        units, exact = iterations(ev, foreach)
        launched = evaluate(units, values).numeric
        if launched is not None and launched <= capacity:
            continue  # the device runs all of them at once: nothing to gain
        # A fact, not a suggestion: no model states its gain (the rewritten kernel's grid,
        # occupancy and accesses follow from choices the message cannot make), and more
        # elements per unit do not touch the bound a kernel is held by; so `-v` shows it,
        # the default view does not.
        message = emit.message(
            code_of(SeveralElementsProposal), FeedbackSeverity.INFO,
            f"each {unit} computes one element of {name}, and the kernel launches {{units}} "
            f"{unit}s while {hwd.name} keeps at most {{concurrent}} resident "
            f"({resident.explain()}): it may be beneficial to compute more than one "
            f"element of {name} per {unit}",
            acc.node.span, {"units": units, "concurrent": capacity},
            acc.item.loops, approximate=not exact,
            hint=(f"let each {unit} compute several elements of {name} in a for-loop, and "
                  f"launch fewer {unit}s, but no fewer than the {int(capacity):,} "
                  f"{hwd.name} keeps resident (e.g. split "
                  f"`{expr_text(_count(foreach[0]))}` by the number of elements per "
                  f"{unit})"))
        stated = message.value_map  # the figures as the message states them
        out.append(SeveralElementsProposal(message, change=ComputeSeveralElements(
            name, AccessPlace.of(acc, expr_text(acc.node), "store"),
            LoopPlace.of(foreach[0]), stated["units"], stated["concurrent"])))
    return out


def _shared_element(facts: Any, access: Any) -> bool:
    """Do several units write the same element: a foreach of more than one unit whose
    variable the subscripts do not depend on (a warp that adds up one row of gesummv into
    `y[i]`, stored by its thread 0)? Then no unit computes an element of its own, and
    the work per element is already divided."""
    ev = facts.evaluator
    deps: set[Any] = set()
    for index in access.indices:
        deps |= ev.deps(index, access.item.scope)
    return any(x.kind == "foreach" and x not in deps and ev.trips(x) != 1
               for x in access.item.loops)


def _one_per_unit(loops: tuple[Any, ...]) -> bool:
    """A store runs once per unit when no for-loop surrounds it."""
    return all(x.kind == "foreach" for x in loops)


def _count(loop: Loop) -> ast.Expr:
    """The unit count of a foreach loop."""
    assert isinstance(loop.node, ast.Foreach)
    return loop.node.count
