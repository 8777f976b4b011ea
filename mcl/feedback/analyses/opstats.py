"""Operation statistics (paper section 6.2, Table II row `perfect`).

For the output-defining, control-flow and indexing blocks (`mcl.feedback.facts.blocks`) count,
per executing par_unit and memory space, the arithmetic instructions, loads and stores,
multiplied by how many times each block runs; report the computational instructions, the
data accesses and the arithmetic intensity. Matmul at perfect: 2nmp computational
instructions, 2nmp + nm data accesses.

What counts as what:
- computational: arithmetic in the values computed by output-defining blocks (`+=`, `*`,
  a built-in such as `sqrt` is one instruction);
- data accesses: loads and stores of output-defining blocks (array elements, and scalars
  in addressable memory; registers are free);
- indexing: arithmetic inside subscripts, and everything in indexing blocks;
- control flow: loop headers, `if` conditions and the blocks they depend on.
Calls are counted through the callee's own statistics ("the call-graph is analyzed from the
leaves up"); library functions without a body count by their signature (their arguments
are read or written). The counting is mcl.feedback.facts.costs; this module reports it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import sympy

from mcl.feedback.analysis import AnalysisContext
from mcl.feedback.emit import Emitter
from mcl.feedback.facts.costs import (
    COMPUTATIONAL,
    CONTROL_OPS,
    DATA,
    INDEXING_OPS,
    REGISTERS,
    Costs,
    function_costs,
)
from mcl.feedback.facts.counting import lowest_terms, tidy
from mcl.feedback.facts.kernel import KernelFacts
from mcl.feedback.findings import OPSTATS_DOCS, Finding, OperationCounts, code_of, declaration
from mcl.feedback.message_code import LEFT_OUT, MessageCode
from mcl.feedback.messages import FeedbackSeverity, Message
from mcl.feedback.phrases import if_lines

# The codes of this analysis (mcl.feedback.codes; the catalogue is docs/feedback.md).
DOCS = OPSTATS_DOCS  # its section of docs/feedback.md
MESSAGE_CODES = (
    declaration(OperationCounts),
    MessageCode("opstats-overhead", "indexing and control-flow overhead",
                (FeedbackSeverity.INFO,), DOCS),
    MessageCode("opstats-memory", "loads and stores per memory space",
                (FeedbackSeverity.INFO,), DOCS),
    MessageCode("opstats-approximate", "counts that are upper bounds",
                (FeedbackSeverity.WARNING,), DOCS, column=LEFT_OUT),
)


# ----------------------------------------------------------------------------- messages


def operation_statistics(ctx: AnalysisContext) -> list[Finding]:
    """Computational instructions, data accesses and arithmetic intensity (paper 6.2)."""
    function, facts, values = ctx.function, ctx.facts, ctx.values
    costs = function_costs(facts, values)
    emit = Emitter(facts, "opstats", values)
    approximate = bool(costs.approximations)
    computational = costs.total(COMPUTATIONAL)
    loads, stores = costs.total(DATA, "load"), costs.total(DATA, "store")
    data = tidy(loads + stores)
    figures = {"computational": computational, "data_accesses": data, "loads": loads,
               "stores": stores}
    # The paper's wording (Table II): "#computational instructions: 2nmp, #data accesses:
    # 2nmp + nm".
    text = ("#computational instructions: {computational}, #data accesses: {data_accesses} "
            "({loads:load|loads} and {stores:store|stores})")
    if data != 0:
        figures["arithmetic_intensity"] = lowest_terms(computational, data)
        text += "; arithmetic intensity {arithmetic_intensity} instructions per access"
    if costs.decided:
        # The counts hold for the sizes given (and all sizes at which these `if`s decide
        # the same way), not for every size: say which `if`s were decided.
        lines = sorted({g.span.line for g in costs.decided.values() if g.span})
        ifs = if_lines(lines)
        text += (f"; counted for sizes at which {ifs} take{'s' if len(lines) == 1 else ''}"
                 " the same branch in every iteration, as at the sizes given")
    summary = emit.message(code_of(OperationCounts), FeedbackSeverity.INFO, text, function.span,
                           figures, approximate=approximate)
    stated = summary.value_map  # the counts as the message states them
    counts = OperationCounts(summary, computational=stated["computational"],
                             data_accesses=stated["data_accesses"])
    out = [emit.message(
        "opstats-overhead", FeedbackSeverity.INFO,
        "overhead: {indexing} indexing and {control_flow} control-flow instructions "
        "(subscript arithmetic, loop headers and conditions)",
        function.span, {"indexing": costs.total(INDEXING_OPS),
                        "control_flow": costs.total(CONTROL_OPS)}, approximate=approximate)]
    out += _per_unit_space(facts, costs, emit, approximate)
    seen = set()
    for span, why in costs.approximations:
        if (span, why) in seen:
            continue
        seen.add((span, why))
        needs = sorted(set(re.findall(r"\biters_\w+", why)))
        hint = ("give the (average) number of iterations for numbers: "
                + " ".join(f"-D {n}=..." for n in needs) if needs else None)
        out.append(emit.message("opstats-approximate", FeedbackSeverity.WARNING,
                                f"approximation: {why}", span, approximate=True, hint=hint))
    # the other facts are for a reader of the report only: plain findings
    return [counts, *(Finding(m) for m in out)]


def _per_unit_space(facts: KernelFacts, costs: Costs, emit: Emitter, approximate: bool
                    ) -> list[Message]:
    """Loads and stores per executing par_unit and memory space (paper 6.2: "data-accesses
    with the memory-space, and which par_unit performs the operation")."""
    spaces: dict[tuple[str, str, str], dict[str, Any]] = defaultdict(
        lambda: {"load": sympy.Integer(0), "store": sympy.Integer(0)})
    for (cat, kind, unit, key), n in costs.entries.items():
        if cat not in (DATA, REGISTERS) or key is None:
            continue
        space = key[1]
        if key[0] == "param":
            p = facts.param(key[1])
            space = p.space if p is not None and p.space else "?"
        spaces[(unit, space, cat)][kind] += n
    out = []
    for (unit, space, cat), counts in sorted(spaces.items()):
        where = (f"registers ({space}), not memory" if cat == REGISTERS
                 else f"memory space {space}")
        out.append(emit.message(
            "opstats-memory", FeedbackSeverity.INFO,
            f"{unit} accesses {where}: {{loads:load|loads}} and {{stores:store|stores}}",
            facts.function.span,
            {"loads": tidy(counts["load"]), "stores": tidy(counts["store"])},
            approximate=approximate))
    return out
