"""Which of a kernel's shared-memory accesses the compiler issues as written, which two it
issues as one wider access, and which it does not issue at: what the bank-conflict survey
(mcl.feedback.lockstep) counts per source line, as Nsight Compute's source page counts
wavefronts per line.

- **Pairs.** Two 4-byte accesses of one array, of one kind, in the same loops and under the
  same guards, whose words lie one apart with the lower 8-byte aligned, are one 64-bit
  access (NVVM's load/store vectoriser): in every iteration where their distance is a
  constant word, and, in a loop the compiler unrolls in full (few constant trips,
  `unrolled`), in the iterations where it is one word. A work-efficient scan's
  `temp[ai]`, `temp[bi]` (`bi - ai = off`) at off = 1: on an H100 the unseen corpus's
  scan issues one 64-bit load at the first load's line and one 64-bit store at the last
  store's (the vectoriser puts a merged load where the first load stood and a merged
  store where the last store stood), its other levels 4-byte accesses.
- **Reloads.** A load of the element an earlier load of the same unit read, in the same
  loops and under the same guards, with no barrier and no store that may write that
  element between, is served from the register the first load filled (the scan's
  down-sweep `temp[ai] = temp[bi]; temp[bi] += carry` loads `temp[bi]` once).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sympy

from mcl.feedback.facts.kernel import Loop
from mcl.feedback.facts.layout import flat_index
from mcl.feedback.kernel_api import Kernel, MemoryInstruction
from mcl.feedback.loop_points import LoopPoints
from mcl.identity import Ref
from mcl.mcpl import ast

WORD_BYTES = 4  # the banks' word, and the element of an access that pairs


def program_order(instruction: MemoryInstruction) -> tuple[int, bool, int]:
    """Where an access runs among the others: by line, a statement's loads before its
    stores (`temp[ai] = temp[bi]` reads before it writes), then by column."""
    span = instruction.span
    return (span.line if span else 0, instruction.kind == "store", span.column if span else 0)


def _same_place(a: MemoryInstruction, b: MemoryInstruction) -> bool:
    """Two element accesses of one array, of one size, in the same loops and under the
    same guards (each unit runs both or neither, as often)."""
    here, there = a.access.item, b.access.item
    return (a.space, a.element_bytes) == (b.space, b.element_bytes) \
        and a.access.binding is b.access.binding and a.access.element and b.access.element \
        and here.loops == there.loops \
        and [(Ref(g.node), g.then) for g in here.guards] == \
        [(Ref(g.node), g.then) for g in there.guards]


def _distance(kernel: Kernel, a: MemoryInstruction, b: MemoryInstruction) -> sympy.Expr:
    """b's element offset less a's (in elements; words, for 4-byte elements)."""
    return sympy.expand(sympy.sympify(flat_index(kernel.facts, b.access))
                        - sympy.sympify(flat_index(kernel.facts, a.access)))


def _counters(kernel: Kernel, loops: Sequence[Loop]) -> dict[sympy.Basic, Loop]:
    symbolic = kernel.facts.evaluator
    return {symbolic.counter(loop): loop for loop in loops}


@dataclass(frozen=True)
class Twin:
    """Another access `other` that may pair with one: its words `step` words above (a
    constant, or an expression in the counters of loops the compiler unrolls in full),
    and whether this access is the one that issues the pair (`carries`: of loads the
    earlier, of stores the later)."""

    other: MemoryInstruction
    step: sympy.Expr
    carries: bool

    def offset(self, kernel: Kernel) -> int | None:
        """At the evaluator's current iteration: the bytes from this access's word to the
        pair's lower word (0 or -4) where the two are one word apart, else None."""
        step = int(kernel.evaluator.number(self.step)) if self.step.free_symbols \
            else self.step
        if step == 1:
            return 0
        if step == -1:
            return -WORD_BYTES
        return None


def twins(kernel: Kernel, instruction: MemoryInstruction, unrolled: Sequence[Loop]
          ) -> list[Twin]:
    """The accesses that `instruction` may be issued with as one 64-bit access: the same
    array, kind, loops and guards, one word apart in some iteration, the distance a
    constant or made of counters of `unrolled` loops; loads the compiler does not issue
    (`reloaded`) are not among them."""
    if not instruction.access.element or instruction.element_bytes != WORD_BYTES:
        return []
    allowed = set(_counters(kernel, unrolled))
    found = []
    for other in kernel.instructions:
        if other is instruction or other.kind != instruction.kind or \
                not _same_place(instruction, other) or reloaded(kernel, other, unrolled):
            continue
        step = _distance(kernel, instruction, other)
        if step.free_symbols - allowed or (not step.free_symbols and step not in (1, -1)):
            continue
        later = program_order(other) > program_order(instruction)
        found.append(Twin(other, step, later if instruction.kind == "load" else not later))
    return found


def _barrier_lines(function: ast.Function) -> list[int]:
    return [n.span.line for n in ast.walk(function)
            if isinstance(n, ast.Barrier) and n.span is not None]


def _never_equal(kernel: Kernel, difference: sympy.Expr, unrolled: Sequence[Loop]) -> bool:
    """Is `difference` (elements, in loop counters) nonzero in every iteration of the
    `unrolled` loops it depends on (a constant: nonzero)?"""
    if not difference.free_symbols:
        return difference != 0
    counters = _counters(kernel, unrolled)
    if difference.free_symbols - set(counters):
        return False
    loops = [counters[c] for c in difference.free_symbols]
    ev = kernel.evaluator
    with LoopPoints(ev, loops) as points:
        return all(ev.number(difference) != 0 for _ in points)


def reloaded(kernel: Kernel, instruction: MemoryInstruction, unrolled: Sequence[Loop]
             ) -> bool:
    """Is `instruction` a load of the element an earlier load of the same array read, in
    the same loops and under the same guards, with no barrier between and no store
    between that may write that element (its distance a constant, or in the counters of
    `unrolled` loops, never zero)? The compiler then issues no second load."""
    if instruction.kind != "load" or not instruction.access.element:
        return False
    here = program_order(instruction)
    barriers = kernel.facts.evaluator.memo(("barrier lines",),
                                           lambda: _barrier_lines(kernel.function))
    for first in kernel.instructions:
        if first.kind != "load" or program_order(first) >= here or \
                not _same_place(first, instruction) or \
                _distance(kernel, first, instruction) != 0:
            continue
        if any(program_order(first)[0] <= line <= here[0] for line in barriers):
            continue
        between = [s for s in kernel.instructions if s.kind == "store"
                   and s.access.binding is instruction.access.binding
                   and program_order(first) < program_order(s) < here]
        if all(s.access.element and s.access.item.loops == instruction.access.item.loops
               and _never_equal(kernel, _distance(kernel, s, instruction), unrolled)
               for s in between):
            return True
    return False
