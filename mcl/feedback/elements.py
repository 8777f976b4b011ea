"""Several elements per unit (paper section 5: gpu message (3), mic; feedback.md
analysis 5).

"It may be beneficial to consider computing more than one element of c per thread." The
advice applies when the description has a finite number of execution slots for the
executing par_unit, the kernel launches more units than that, and each unit writes a
single output element (its store is inside foreach statements only, not in a for-loop).
Where the description's slots are unlimited (perfect, accelerator) the analysis does not
run at all.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from mcl.feedback.analysis import AnalysisContext
from mcl.feedback.blocks import OUTPUT, classify
from mcl.feedback.counting import iterations
from mcl.feedback.emit import Emitter, expr_text
from mcl.feedback.kernel import Loop
from mcl.feedback.messages import Message, Severity
from mcl.feedback.values import evaluate
from mcl.mcpl import ast

if TYPE_CHECKING:
    from mcl.hdl.model import HardwareDescription


def concurrent_units(hwd: HardwareDescription) -> float:
    """How many executing units the device runs at once (slots x number of execution
    units); math.inf when unlimited."""
    unit = hwd.executing_unit().name
    capacities = [info.slots * info.nr_units for info in hwd.execution_units_for(unit)]
    finite = [c for c in capacities if c != math.inf]
    return max(finite) if finite else math.inf


def finite_slots(hwd: HardwareDescription) -> bool:
    return concurrent_units(hwd) != math.inf


def several_elements(ctx: AnalysisContext) -> list[Message]:
    """Suggest computing more than one output element per executing unit."""
    hwd, facts, values = ctx.hwd, ctx.facts, ctx.values
    emit = Emitter(facts, "elements", values)
    ev = facts.evaluator
    kinds = classify(facts)
    unit = hwd.executing_unit().name
    capacity = concurrent_units(hwd)
    outputs = {p.name for p in facts.params if "w" in facts.param_modes.get(p.name, "")}
    stores = [a for a in facts.accesses
              if a.writes and a.binding.root.name in outputs and a.binding.root.kind == "param"
              and kinds[id(a.item)] == OUTPUT]
    if not stores or any(not _one_per_unit(a.item.loops) for a in stores):
        return []
    out: list[Message] = []
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
        out.append(emit.message(
            "elements-several-per-unit", Severity.SUGGESTION,
            f"each {unit} computes one element of {name}, and the kernel launches {{units}} "
            f"{unit}s while {hwd.name} runs at most {{concurrent}} at a time: it may be "
            f"beneficial to compute more than one element of {name} per {unit}",
            acc.node.span, {"units": units, "concurrent": capacity},
            acc.item.loops, approximate=not exact,
            hint=(f"let each {unit} compute several elements of {name} in a for-loop, and "
                  f"launch fewer {unit}s (e.g. split `{expr_text(_count(foreach[0]))}` "
                  "by the number of elements per unit)")))
    return out


def _one_per_unit(loops: tuple[Any, ...]) -> bool:
    """A store runs once per unit when no for-loop surrounds it."""
    return all(x.kind == "foreach" for x in loops)


def _count(loop: Loop) -> ast.Expr:
    """The unit count of a foreach loop."""
    assert isinstance(loop.node, ast.Foreach)
    return loop.node.count
