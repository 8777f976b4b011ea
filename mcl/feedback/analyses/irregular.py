"""Irregular access: stores at data-dependent addresses and loops with data-dependent
bounds (the paper's irregular applications of section 7, histogram and spmv).

Sections 6.3 and 6.4 give up on an index that depends on array values ("unpredictable").
Two things can still be said honestly, from the description and the code alone:

* A store `hist[image[i, j]]` (usually an `atomicAdd`) goes to one of the elements of the
  copy of `hist` it writes — the product of the dimensions whose subscript depends on
  data (`distinct` addresses) — and every unit of the foreach loops that do not select
  the copy writes into it (`writers`). Of those, at most the units the description runs
  at once write concurrently (`concurrent`: the slots of the executing unit times the
  execution units). `concurrent / distinct` is the number of concurrent writers per
  address when the values are spread evenly; all `concurrent` of them collide when they
  are equal. Atomic updates of one address run one after another, so the cure is
  privatisation: a copy per unit of a par_group in a faster memory that the units of the
  inner group share (gpu: one histogram per block in `local`), added into the original
  at the end. Without a faster space, copies in the same space per unit of the outer
  group still cut the writers per copy (a histogram per mic thread for its 16 lanes).
  A copy pays off only when it receives many more updates than it has elements (the
  merge adds `distinct` updates per copy): the message says when that is not the case.

  All of this is about updates: a store that reads what it writes (`+=`, an atomic,
  `hist[v] = hist[v] + 1`). A plain store at a data-dependent address (`y[r] = s`, a
  scatter) loses nothing and queues behind nothing when each address has one writer,
  which the data decides (spmv stores each row from the one thread that ends it), so it
  gets none of these messages; two writers of one address would be the program's error
  whatever the analysis said.

* A for-loop `k = rowptr[i] .. rowptr[i + 1]` has an unknown trip count, but its variable
  still advances by a fixed step: an access affine in it (`vals[k]`, `cols[k]`) moves by
  a fixed stride per iteration, which is the stride reported. The trip count differs per
  unit of the foreach loops its bounds depend on; with `-D iters_k=` (the average) and
  `-D max_iters_k=` (the maximum) the analysis gives the imbalance: the longest unit runs
  `max / avg` times the average, and units that run in lock-step (a warp, the lanes of a
  vector unit) wait for the longest of them, so at worst `avg / max` of their lanes do
  useful work.

Tests: tests/feedback/test_irregular.py, against brute-force counts of the traced kernels.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy

from mcl.feedback.analysis import AnalysisContext
from mcl.feedback.emit import Emitter, expr_text
from mcl.feedback.facts.compiled import Compiler
from mcl.feedback.facts.contention import (
    Contention,
    data_dependent,
    more_than_one,
    product,
    store_contention,
)
from mcl.feedback.facts.hardware import faster_space, lockstep_group, space_capacity
from mcl.feedback.facts.kernel import Access, KernelFacts, Loop
from mcl.feedback.facts.layout import element_layout, flat_index
from mcl.feedback.facts.strides import loop_stride, substituted
from mcl.feedback.facts.symbolic import iterations_symbol
from mcl.feedback.findings import (
    IRREGULAR_DOCS,
    AccessPlace,
    Finding,
    LoopPlace,
    PrivatisationProposal,
    PrivatiseArray,
    code_of,
    declaration,
)
from mcl.feedback.message_code import MessageCode
from mcl.feedback.messages import FeedbackSeverity, Message
from mcl.feedback.values import evaluate
from mcl.identity import Ref
from mcl.mcpl import ast

# The codes of this analysis (mcl.feedback.codes; the catalogue is docs/feedback.md).
DOCS = IRREGULAR_DOCS  # its section of docs/feedback.md
MESSAGE_CODES = (
    MessageCode("store-contention", "concurrent writers per data-dependent address",
                (FeedbackSeverity.INFO,), DOCS),
    MessageCode("store-race", "data-dependent updates without atomicAdd",
                (FeedbackSeverity.WARNING,), DOCS),
    declaration(PrivatisationProposal),
    MessageCode("loop-data-bounds-stride", "stride inside a loop with data-dependent bounds",
                (FeedbackSeverity.INFO,), DOCS),
    MessageCode("loop-data-bounds-imbalance", "load imbalance of data-dependent trip counts",
                (FeedbackSeverity.INFO, FeedbackSeverity.SUGGESTION), DOCS),
)


def max_iterations_symbol(loop: Loop) -> sympy.Symbol:
    """The maximum trip count of a loop with data-dependent bounds, asked for by name
    (`-D max_iters_k=...`) beside the average `iters_k`."""
    return sympy.Symbol(f"max_iters_{loop.name}", integer=True, positive=True)


# ----------------------------------------------------------------------------- stores


@dataclass(frozen=True)
class Privatisation:
    """Copies of the array per unit of `outer` (the foreach loops outside the group whose
    units share one copy), in `space`."""

    space: str
    faster: bool
    outer: tuple[Loop, ...]
    inner: tuple[Loop, ...]


def privatisation(facts: KernelFacts, c: Contention) -> Privatisation | None:
    """Where to privatise: the outermost par_group among the sharing loops whose units
    would share a copy in a faster space; else a copy per unit of the outermost group in
    the array's own space, when an inner group remains to share it."""
    hwd = facts.hwd
    current = c.access.binding.root.space
    groups: list[str] = []
    for loop in c.sharing:
        if loop.group is not None and loop.group not in groups:
            groups.append(loop.group)
    for group in groups:
        space = faster_space(hwd, group, current)
        if space is not None:
            return _split(c, group, space, True)
    if len(groups) > 1 and current is not None:
        return _split(c, groups[1], current, False)
    return None


def _split(c: Contention, group: str, space: str, faster: bool) -> Privatisation:
    first = next(k for k, x in enumerate(c.sharing) if x.group == group)
    return Privatisation(space, faster, c.sharing[:first], c.sharing[first:])


def _store_findings(emit: Emitter, c: Contention) -> list[Finding]:
    facts = emit.facts
    ev = facts.evaluator
    acc = c.access
    text = expr_text(acc.node)
    name = acc.binding.name
    unit = facts.hwd.executing_unit().name
    per_address = c.concurrent / c.distinct
    figures = {"distinct": c.distinct, "writers": c.writers, "concurrent": c.concurrent,
               "per_address": per_address, "updates": c.updates}
    why = "; ".join(c.reasons)
    out: list[Finding] = []
    if not c.atomic and more_than_one(c.writers, emit.values):
        out.append(Finding(emit.message(
            "store-race", FeedbackSeverity.WARNING,
            f"{text} is updated at an address that depends on data ({why}) by {{writers}} "
            f"{unit}s without atomicAdd: {unit}s that meet at one address lose updates",
            acc.node.span, figures, acc.item.loops,
            hint=f"use atomicAdd({text}, ...), or give each {unit} its own copy")))
    # A store under a condition on data (`if (firstRow >= 0) rowSum[firstRow] += t`) runs
    # where the data say, and kernels written that way usually let the data give each
    # address one writer (spmv's rows joined by the unit that ends them): the writers and
    # updates are upper bounds, contention is not known, and a copy per group would only
    # add its merge. No privatisation is proposed for it (a hint that may slow a kernel
    # down is worse than none); the contention figures stay, marked as bounds.
    chosen_by_data = next((g for g in acc.item.guards
                           if data_dependent(facts, g.cond, g.scope)), None)
    plan = None if chosen_by_data is not None else privatisation(facts, c)
    layout = element_layout(facts, acc.binding, acc.field)
    copy_bytes = c.distinct * (layout[0] if layout else 4)
    too_large = plan is not None and _too_large(emit, copy_bytes, plan.space)
    if too_large:
        plan = None  # a copy the space cannot hold is no proposal (it would not launch)
    if chosen_by_data is not None:
        contention_hint = _chosen_by_data_hint(chosen_by_data, unit)
    else:
        contention_hint = (
            f"privatise {name}: " + (
                "see the store-privatise message" if plan is not None else
                f"give groups of {unit}s their own copy and add the copies into {name} at "
                "the end") + (f" (a whole copy of {name} does not fit {too_large}: copy the "
                              "range of addresses a group writes, or sort the updates first)"
                              if too_large else "")
            + f"; computing several elements per {unit} does not remove the contention")
    # The problem of such a store is contention, not the work per unit: the
    # message says so, and the several-elements advice is not given for it (`contended`).
    out.append(Finding(emit.message(
        "store-contention", FeedbackSeverity.INFO,
        ("atomic contention: " if c.atomic else "") +
        f"{text} is written at an address that depends on data ({why}): {{writers}} "
        f"{unit}s write into one copy of {name} ({{concurrent}} of them resident at once) "
        f"at {{distinct}} distinct addresses: at most {{per_address}} concurrent writers per "
        f"address when the values are spread evenly, all {{concurrent}} on one address when "
        f"they are equal; updates of one address run one after another",
        acc.node.span, figures, acc.item.loops,
        hint=contention_hint)))
    if plan is None:
        return out
    copies = product(ev.trips(x) for x in plan.outer)
    sharers = product(ev.trips(x) for x in plan.inner)
    per_copy = c.updates / copies
    figures = {"copies": copies, "sharers": sharers, "distinct": c.distinct,
               "writers": c.writers,
               "copy_bytes": copy_bytes, "merge_updates": copies * c.distinct,
               "updates": c.updates, "updates_per_copy": per_copy}
    owner = (plan.outer[-1].group if plan.outer else None) or "kernel"
    owner_unit = owner[:-1] if owner.endswith("s") else owner
    where = (f"in {plan.space} (faster than {acc.binding.root.space})" if plan.faster
             else f"in {plan.space}")
    # The suggestion a report shows by default names the problem too (store-contention is
    # a fact): atomic updates of few addresses queue.
    text_out = ((f"atomic contention on the {{distinct}} addresses of {name}: " if c.atomic
                 else "") +
                f"privatise {name}: a copy per {owner_unit} {where} of {{copy_bytes}} bytes, "
                f"shared by its {{sharers}} {unit}s, cuts the writers per copy from "
                f"{{writers}} to {{sharers}}; adding the {{copies}} copies into {name} at "
                f"the end costs {{merge_updates}} updates against the {{updates}} of now")
    small = _less(per_copy, c.distinct * 4, emit.values)
    hint = (f"declare `{plan.space} int[...] ` for the copy inside the foreach over "
            f"{owner}, update it with atomicAdd, barrier, then add it into {name}")
    if small:
        text_out += (f"; with {{updates_per_copy}} updates per copy for {{distinct}} "
                     f"elements the merge would cost about as much as it saves: let each "
                     f"{unit} handle several "
                     f"elements first")
        hint = f"compute several elements per {unit} first, then privatise"
    message = emit.message(code_of(PrivatisationProposal), FeedbackSeverity.SUGGESTION,
                           text_out, acc.node.span, figures, acc.item.loops, hint=hint)
    stated = message.value_map  # the figures as the message states them
    out.append(PrivatisationProposal(message, change=PrivatiseArray(
        acc.binding.root.name, AccessPlace.of(acc, text, "store"), plan.space, plan.faster,
        tuple(LoopPlace.of(x) for x in plan.outer), tuple(LoopPlace.of(x) for x in plan.inner),
        stated["copies"], stated["copy_bytes"])))
    return out


def _chosen_by_data_hint(guard: Any, unit: str) -> str:
    """The contention hint of a store under a condition on data (`guard`)."""
    line = guard.span.line if guard.span is not None else "?"
    return (f"the store runs only where the condition at line {line} holds, which the data "
            f"decide: these figures are upper bounds; if the data give each address one "
            f"{unit} there, nothing contends, otherwise use atomicAdd or privatise")


def _too_large(emit: Emitter, copy_bytes: Any, space: str) -> str:
    """'space (N B)' when a copy of `copy_bytes` is known to exceed what `space` holds
    (decided with the sizes given, never guessed); '' otherwise."""
    capacity = space_capacity(emit.facts.hwd, space)
    if capacity is None:
        return ""
    return f"{space} ({capacity:,} B)" if _less(capacity, copy_bytes, emit.values) else ""


def _less(a: Any, b: Any, values: Mapping[str, Any]) -> bool:
    """a < b when both have numbers; unknown counts as False (no claim)."""
    x, y = evaluate(a, values).numeric, evaluate(b, values).numeric
    return x is not None and y is not None and x < y


# ----------------------------------------------------------------------------- loops


@dataclass(frozen=True)
class DataLoop:
    """A for-loop with data-dependent bounds whose variable advances by a fixed step."""

    loop: Loop
    varying: tuple[Loop, ...]  # foreach loops whose units get different trip counts


def data_loops(facts: KernelFacts) -> list[DataLoop]:
    ev = facts.evaluator
    out = []
    for loop in facts.loops:
        if loop.kind != "for":
            continue
        shape = ev.shape(loop)
        if shape.exact or "depend on data" not in (shape.reason or ""):
            continue
        node = loop.node
        assert isinstance(node, ast.For)
        init = node.init.init if isinstance(node.init, ast.Decl) else node.init.value
        deps = ev.deps(init, loop.scope) | ev.deps(node.cond, loop.body_scope)
        reads = _bound_reads(facts, loop)
        varying = tuple(x for x in loop.parents if x.kind == "foreach" and x in deps
                        and _varies(facts, reads, x))
        out.append(DataLoop(loop, varying))
    return out


def _bound_reads(facts: KernelFacts, loop: Loop) -> list[Any]:
    """The subscripts (SymPy) of the array elements the bounds of `loop` read:
    `i` and `i + 1` for `rowptr[i] .. rowptr[i + 1]`."""
    node = loop.node
    assert isinstance(node, ast.For)
    init = node.init.init if isinstance(node.init, ast.Decl) else node.init.value
    out = []
    for expr, scope in ((init, loop.scope), (node.cond, loop.body_scope)):
        for sub in ast.walk(expr):
            if isinstance(sub, ast.Index):
                out += [facts.evaluator.sym(i, scope) for i in sub.indices]
    return out


# Units of a foreach tried when deciding whether a figure changes with them: a lock-step
# group (32 threads, 16 lanes) whole, other foreach loops their first units.
_TRIED_UNITS = 64
_TRIALS = 4
_COMPILED = Compiler("math")


def _sampled(facts: KernelFacts, exprs: list[Any], loop: Loop) -> list[list[tuple[Any, ...]]]:
    """`exprs` evaluated for the first units of `loop`, in a few random settings of every
    other name (counters of other loops small, sizes and data large); [] when they cannot
    be evaluated. The subscripts of translated code use floor and Mod of the unit index
    (`t / GROUP`, `t % GROUP`), which SymPy does not simplify without the ranges: sampling
    the units of one group decides whether a subscript changes within it."""
    import random

    ev = facts.evaluator
    counter = ev.counter(loop)
    trips = evaluate(ev.trips(loop), {}).numeric
    units = int(min(trips or _TRIED_UNITS, _TRIED_UNITS))
    exprs = [sympy.sympify(e) for e in exprs]
    names = sorted(set().union(*(e.free_symbols for e in exprs)) - {counter}, key=str)
    counters = {ev.counter(x) for x in facts.loops}
    # Compiled once per process per formula (lambdify is 20 to 30 ms for a subscript of
    # a block's share of non-zeros), whatever the counters of this analysis are called.
    try:
        fn = _COMPILED((counter, *names), tuple(exprs))
    except Exception:  # noqa: BLE001 - an expression lambdify cannot print: no claim
        return []
    rng = random.Random(14)
    out = []
    for _ in range(_TRIALS):
        env = [rng.randrange(0, 50) if n in counters else rng.randrange(1000, 100000)
               for n in names]
        try:
            out.append([tuple(fn(c, *env)) for c in range(units)])
        except (ArithmeticError, TypeError, ValueError):
            return []
    return out


def _varies(facts: KernelFacts, exprs: list[Any], loop: Loop) -> bool:
    samples = _sampled(facts, exprs, loop)
    return not samples or any(len(set(trial)) > 1 for trial in samples)


def lane_stride(facts: KernelFacts, access: Access, lane: Loop) -> Any | None:
    """Bytes between the elements neighbouring lock-step units reach in the same iteration,
    for an index that reads the same data in all of them (a group of threads per row)."""
    layout = element_layout(facts, access.binding, access.field)
    index = _index_with_data_loops(facts, access)
    if layout is None or index is None:
        return None
    # the same iteration of every for-loop (counter 0); the units are sampled
    index = substituted(index, tuple((facts.evaluator.counter(x), 0) for x in facts.loops
                                     if x.kind == "for"))
    samples = _sampled(facts, [index], lane)
    steps = {b[0] - a[0] for trial in samples for a, b in zip(trial, trial[1:], strict=False)}
    return steps.pop() * layout[0] if len(steps) == 1 else None


def loop_value(facts: KernelFacts, loop: Loop) -> Any | None:
    """The variable of a for-loop with data-dependent bounds as `start + step * counter`
    (the start an unknown from data); None when the step is not a fixed addition. The
    evaluator keeps such a variable opaque, as its trip count is unknown. Found once per
    loop (every access's index asks for every such loop: 700 times a job in spmv)."""
    return facts.evaluator.memo(("irregular: loop value", Ref(loop)),
                                lambda: _loop_value(facts, loop))


def _loop_value(facts: KernelFacts, loop: Loop) -> Any | None:
    from mcl.feedback.facts.loop_forms import loop_step

    ev = facts.evaluator
    node = loop.node
    assert isinstance(node, ast.For)
    step = loop_step(node.step, loop.name)
    if step is None or step[0] != "add":
        return None
    inc = ev.sym(step[1], loop.body_scope)
    init = node.init.init if isinstance(node.init, ast.Decl) else node.init.value
    start = ev.sym(init, loop.scope)
    if start is None or inc is None or any(ev.is_opaque(s) for s in inc.free_symbols):
        return None
    return start + inc * ev.counter(loop)


def _index_with_data_loops(facts: KernelFacts, access: Access) -> Any:
    """The flat index of an access with the variables of loops with data-dependent bounds
    as `start + step * counter`, found once per access (asked for each loop around it)."""
    return facts.evaluator.memo(("irregular: index with data loops", Ref(access)),
                                lambda: _found_index_with_data_loops(facts, access))


def _found_index_with_data_loops(facts: KernelFacts, access: Access) -> Any:
    ev = facts.evaluator
    index = flat_index(facts, access)
    for loop in facts.loops:
        if loop.kind == "for" and not ev.shape(loop).exact:
            value = loop_value(facts, loop)
            if value is not None:
                index = substituted(index, ((ev.opaque(loop.var), value),))
    return index


def element_stride(facts: KernelFacts, access: Access, loop: Loop) -> Any | None:
    """Bytes between the elements an access reaches in two consecutive iterations (or
    units) of `loop`; None when the index depends on data or the stride is not fixed.
    The variables of loops with data-dependent bounds count as `start + step * t`."""
    ev = facts.evaluator
    layout = element_layout(facts, access.binding, access.field)
    index = _index_with_data_loops(facts, access)
    if layout is None or index is None:
        return None
    counter = ev.counter(loop)
    if counter not in index.free_symbols:
        return None  # not reached through this loop (or only through data)
    stride = loop_stride(index, counter, 0, 1)
    others = {ev.counter(x) for x in facts.loops}
    if stride.free_symbols & others or any(ev.is_opaque(s) for s in stride.free_symbols):
        return None
    return stride * layout[0]


def _loop_messages(emit: Emitter, d: DataLoop) -> list[Message]:
    facts = emit.facts
    loop = d.loop
    node = loop.node
    assert isinstance(node, ast.For)
    init = node.init.init if isinstance(node.init, ast.Decl) else node.init.value
    bounds = f"{expr_text(init)} .. {expr_text(_bound(node.cond))}"
    out = []
    lockstep = lockstep_group(facts.hwd)
    lanes = [x for x in loop.parents if lockstep and x.group == lockstep[0]]
    for acc in facts.accesses:
        if loop not in acc.item.loops or not acc.element:
            continue
        text = expr_text(acc.node)
        stride = element_stride(facts, acc, loop)
        if stride is None:
            continue
        layout = element_layout(facts, acc.binding, acc.field)
        elements = stride / (layout[0] if layout else 1)
        figures: dict[str, Any] = {"stride_bytes": stride, "stride_elements": elements}
        msg = (f"{text} in for-loop {loop.name} (bounds {bounds} depend on data): "
               f"consecutive iterations access elements {{stride_bytes}} B apart "
               f"({{stride_elements:element|elements}})")
        if lanes and lockstep:
            lane = lanes[-1]
            if lane in d.varying:
                msg += (f"; the {lockstep[1]} {lane.group} {lane.name} that run in lock-step "
                        f"start at data-dependent positions, so their accesses are not "
                        f"neighbours")
            else:
                across = lane_stride(facts, acc, lane)
                if across is not None:
                    figures["lane_stride_bytes"] = across
                    msg += (f"; the {lockstep[1]} {lane.group} {lane.name} that run in "
                            f"lock-step access elements {{lane_stride_bytes}} B apart")
        out.append(emit.message("loop-data-bounds-stride", FeedbackSeverity.INFO, msg,
                                acc.node.span,
                                figures, acc.item.loops))
    if d.varying:
        out.append(_imbalance(emit, d, bounds, lanes, lockstep))
    return out


def _bound(cond: ast.Expr) -> ast.Expr:
    return cond.right if isinstance(cond, ast.Binary) else cond


def _imbalance(emit: Emitter, d: DataLoop, bounds: str, lanes: list[Loop],
               lockstep: tuple[str, int] | None) -> Message:
    loop = d.loop
    ev = emit.facts.evaluator
    avg, top = iterations_symbol(loop), max_iterations_symbol(loop)
    units = product(ev.trips(x) for x in d.varying)
    who = " and ".join(f"{x.group} {x.name}" for x in d.varying)
    figures = {"units": units, "average": avg, "maximum": top, "imbalance": top / avg,
               "efficiency": avg / top}
    text = (f"the trip count of for-loop {loop.name} ({bounds}) depends on data and differs "
            f"between the {{units}} units of {who}: with an average of {{average}} and a "
            f"maximum of {{maximum}} iterations, the longest unit runs {{imbalance}} times "
            f"the average")
    varying_lanes = [x for x in lanes if x in d.varying]
    if varying_lanes and lockstep:
        text += (f"; the {lockstep[1]} {varying_lanes[-1].group} that run in lock-step wait "
                 f"for the longest of them, so at worst {{efficiency}} of the lane time of the "
                 f"units that have work is useful")
    severity = FeedbackSeverity.SUGGESTION if _less(1.5, top / avg, emit.values) \
        else FeedbackSeverity.INFO
    return emit.message(
        "loop-data-bounds-imbalance", severity, text, loop.span, figures, loop.parents,
        hint=(f"give -D {avg}=... (average) and -D {top}=... (maximum); long iterations "
              f"spread over several units (a group of units per {loop.name}-loop) or work "
              f"divided by elements rather than by units evens the load"))


# ----------------------------------------------------------------------------- analysis


def irregular_access(ctx: AnalysisContext) -> list[Finding]:
    """Contention of data-dependent stores (privatisation) and strides and imbalance of
    loops with data-dependent bounds."""
    facts, values = ctx.facts, ctx.values
    emit = Emitter(facts, "irregular", values)
    out: list[Finding] = []
    seen: set[Ref[ast.Expr]] = set()  # an access node once, wherever it stands
    for acc in facts.accesses:
        c = store_contention(facts, acc, values)
        # A plain store is no update: nothing to lose, queue or privatise (`Contention`).
        if c is not None and c.update and Ref(acc.node) not in seen:
            seen.add(Ref(acc.node))
            if more_than_one(c.writers, values):  # a copy per unit: nothing to contend
                out += _store_findings(emit, c)  # as `contended` says
    for d in data_loops(facts):
        out += [Finding(m) for m in _loop_messages(emit, d)]
    return out
