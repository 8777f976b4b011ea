"""The warp instructions a kernel issues, per phase between barriers, from the compiler's
machine code of each source line (mcl.feedback.compiler_instructions) and how often the
feedback counts each line to run: the time model's issue term (docs/feedback.md, "Time
estimate"; mcl.feedback.analyses.timemodel).

The counts of the feedback say how often each statement runs (the MCL paper's section
6.2, operation statistics); the arithmetic peak counts only its floating-point
operations, and the on-chip term only its shared and cached bytes. A warp scheduler
issues every instruction, one per cycle: the index arithmetic, the comparisons and
branches of guards, the conversions, and the integer divisions and remainders that split
one block index into a nest of foreach loops of one par_group (section 4.3 lets them
nest; a signed division by a size is 27 instructions). Nsight Compute counts 86.1 M warp
instructions on a 3-D stencil with a halo (stencil3d_halo of the unseen corpus), 38 M of
them on the two foreach lines that split the block index; the time model without this
term estimated it 83% too fast.

A line's machine code is over every copy the compiler made of it: a loop it unrolls (a
constant trip count code generation asks for, or a trip count NVVM unrolls by 4 with a
remainder) holds the line's instructions several times, while the feedback counts its
runs once per iteration. The machine code's own loops (a branch back to an earlier
instruction) tell which: a line's code in fewer of them than its statement has for-loops
around it was unrolled fully (or hoisted out) and runs once per pass of the loops
outside; in as many, once per iteration and copy. The copies of a line in a loop are
the bytes its loads and stores move in the machine code over the bytes its accesses
move once (`copies`); a line of the loop without accesses takes its loop's. Each line
runs as often as its most frequent item (a statement, an `if`, a loop header), each
warp once where all its lanes run it (the thread count over the warp size); a line with
no item (a kernel's entry, the foreach lines) once per warp.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from mcl.feedback.analysis import AnalysisContext
from mcl.feedback.compiler_instructions import Lines
from mcl.feedback.facts.contention import is_atomic
from mcl.feedback.facts.costs import executions, executions_under
from mcl.feedback.facts.kernel import COUNT, IF, INIT, STEP
from mcl.feedback.facts.sizes import space_and_size
from mcl.feedback.values import evaluate
from mcl.identity import Ref


def phase_instructions(ctx: AnalysisContext, code: Lines, count: int,
                       phase: Callable[[int], int], lanes: int, warps: float,
                       moves: Callable[[Any], bool], skipped: set[Ref[Any]]
                       ) -> list[float] | None:
    """The warp instructions of each of `count` phases (`phase` of a source line); `code`
    the machine code per line, `warps` the kernel's warps, `moves` whether an access's
    space has loads and stores in the machine code (device and shared memory, not
    registers); items under an `if` in `skipped` (the lower counts' undecided ones) do
    not run. None where a count is not a number at the sizes given."""
    facts = ctx.facts
    ifs = {Ref(i.node): i for i in facts.items if i.kind == IF}
    known: dict[Ref[Any], float | None] = {}

    def predicated(guard: Any) -> bool:
        """Has the compiler predicated this `if`: no conditional branch on its line?"""
        node = ifs.get(Ref(guard.node))
        line = node.span.line if node is not None and node.span is not None else 0
        return node is not None and not any(c.branches for c in code.get(line, ()))

    def warp_runs(item: Any) -> float | None:
        """How often the warps issue `item`: its units' runs over the warp size (a lower
        bound where a condition splits the lanes of a warp), under the `if`s around it
        the compiler branches on; the innermost ones it predicated the warps issue
        wherever they reach them, the lanes that fail turned off."""
        if Ref(item) in known:
            return known[Ref(item)]
        guards = item.guards
        while guards and predicated(guards[-1]):
            guards = guards[:-1]
        number = evaluate(executions_under(facts, item, guards), ctx.values).numeric
        found = None if number is None else float(number) / lanes
        known[Ref(item)] = found
        return found

    runs: dict[int, float] = {}
    loops: dict[int, tuple[Any, ...]] = {}  # the for-loops around each line's code
    source_bytes: dict[int, float] = {}
    for item in facts.items:
        line = item.span.line if item.span is not None else 0
        if any(Ref(g.node) in skipped for g in item.guards):
            runs.setdefault(line, 0.0)
            continue
        if not _per_unit(item):
            continue
        number = warp_runs(item)
        if number is None:
            return None
        if number >= runs.get(line, 0.0):
            runs[line] = number
            loops[line] = _for_loops(item)
        moved = _access_bytes(facts, item.accesses, moves)
        if moved is None:
            return None
        source_bytes[line] = source_bytes.get(line, 0.0) + moved
    copies = _copies(code, source_bytes, loops)
    trips = _mean_trips(ctx)
    if trips is None:
        return None
    kept = _kept(code, loops)
    out = [0.0] * count
    for line, parts in code.items():
        around = loops.get(line, ())
        for c in parts:
            if around and Ref(around[-1]) in kept and c.depth == len(around) - 1:
                continue  # the set-up and remainder of a loop unrolled in part (`_kept`)
            # code in fewer loops than its statement: the innermost loops unrolled fully,
            # or the code hoisted out of them; it runs once per pass of those outside
            # (and where a loop outside those is unrolled in part, its copies besides, as
            # many as the bytes of the code say: the copies of both multiply)
            passes = math.prod(trips.get(Ref(x), 1.0) for x in around[c.depth:])
            moved = source_bytes.get(line, 0.0)
            again = copies.get(line, 1.0) if c.depth >= len(around) else max(
                passes, round(c.memory_bytes / moved) if moved else 1.0)
            out[min(phase(line), count - 1)] += c.instructions / again * runs.get(line, warps)
    return out


def _mean_trips(ctx: AnalysisContext) -> dict[Ref[Any], float] | None:
    """The mean trip count of each for-loop: its steps over its entries (a grid-stride
    loop's count differs from unit to unit); None where a count is not a number."""
    facts = ctx.facts
    counts: dict[Ref[Any], list[float]] = {}
    for item in facts.items:
        if item.loop is None or item.loop.kind != "for" or item.kind not in (INIT, STEP):
            continue
        number = evaluate(executions(facts, item)[0], ctx.values).numeric
        if number is None:
            return None
        counts.setdefault(Ref(item.loop), [0.0, 0.0])[item.kind == STEP] += float(number)
    return {k: max(1.0, steps / entries) if entries else 1.0
            for k, (entries, steps) in counts.items()}


def _for_loops(item: Any) -> tuple[Any, ...]:
    """The for-loops around an item's code, outermost first: a loop header's code is in
    its own loop."""
    own = (item.loop,) if item.loop is not None and item.loop.kind == "for" else ()
    return tuple(x for x in item.loops if x.kind == "for") + own


def _per_unit(item: Any) -> bool:
    """Do the feedback's counts of `item` say how often the units run it? Not for a
    foreach header (counted once per loop, its code runs in every unit: the split of the
    block and thread indices) nor for a statement outside every foreach (code
    generation computes it on the host or in every unit): those lines run once per
    warp."""
    if item.kind == COUNT and item.loop is not None and item.loop.kind == "foreach":
        return False
    return any(loop.kind == "foreach" for loop in item.loops)


def _access_bytes(facts: Any, accesses: Sequence[Any], moves: Callable[[Any], bool]
                  ) -> float | None:
    """The bytes one run of an item's accesses moves with loads and stores (a read and
    a write of one element, two moves; an atomic update, one)."""
    total = 0.0
    for a in accesses:
        if not moves(a):
            continue
        root = a.binding.root
        key = ("param", root.name) if root.kind == "param" else ("space", a.space)
        size = evaluate(space_and_size(facts, key)[1], {}).numeric
        if size is None:
            return None
        directions = 1 if is_atomic(a) else int(a.reads) + int(a.writes)
        total += float(size) * directions
    return total


def _copies(code: Lines, source_bytes: dict[int, float], loops: dict[int, tuple[Any, ...]]
            ) -> dict[int, float]:
    """The copies the compiler made of each line in a loop it kept as a loop: the bytes
    of its code in as many loops as the statement over its accesses' (at least 1); a
    line without accesses takes the most of its loop's lines."""
    own: dict[int, float] = {}
    for line, around in loops.items():
        moved = source_bytes.get(line, 0.0)
        kept = sum(c.memory_bytes for c in code.get(line, ()) if around
                   and c.depth >= len(around))
        if moved and kept:
            own[line] = max(1.0, round(kept / moved))
    by_loop: dict[Ref[Any], float] = {}
    for line, n in own.items():
        key = Ref(loops[line][-1])
        by_loop[key] = max(by_loop.get(key, 1.0), n)
    return {line: own.get(line, by_loop.get(Ref(around[-1]), 1.0))
            for line, around in loops.items() if around}


def _kept(code: Lines, loops: dict[int, tuple[Any, ...]]) -> set[Ref[Any]]:
    """The innermost for-loops the compiler kept as loops: one of their lines has code
    in as many loops of the machine code as around the statement. The code of their
    lines just outside them (in one loop fewer) is the set-up and remainder of a loop
    unrolled in part (NVVM unrolls a loop whose trip count a size gives by 4 or 16,
    computes the passes before it and runs the remaining iterations after it, in
    copies each behind a branch), which the iterations of the loop body outweigh and
    which runs only in part: it is not counted (short_block_sum: 1,890 warp
    instructions counted, 1,964 measured; 2,480 with it)."""
    return {Ref(around[-1]) for line, around in loops.items() if around
            and any(c.depth >= len(around) for c in code.get(line, ()))}
