"""Iterations of a shared-memory access that cost the same, so that the bank-conflict
survey (mcl.feedback.lockstep.conflict_survey) walks one of each kind instead of all.

The survey follows, one by one, the iterations of the for-loops an access's address or
guards depend on (up to 256: a work-efficient scan's levels conflict 2-, 4-, 8-, 16-way).
What a warp's request costs depends only on which lanes run it and on the banks and
alignment of their words (the paper's section 6.5: "the number of bank conflicts for
threads"; CUDA C++ Programming Guide, "Shared Memory": successive 32-bit words in
successive banks). Many of those iterations issue the very same request, moved as a whole:

- a term of the address in loop counters only (no unit's counter) moves every lane's word
  alike (matmul hopper (v2)'s double-buffered `l_b[cur, kk][..]` with `cur = l % 2`:
  1024 words further every other phase). A move by a multiple of `banks` words that keeps
  the 16-byte alignment (`modulus`) changes no bank, no conflict and no wide access;
- a guard in loop counters only is decided alike for every lane (`if (l + 1 <
  nrPhases)`): its truth, not the counter, decides which lanes run.

`IterationClasses.key` names the class of the survey's current iteration: the positions
of the loops it must still tell apart, the truths of such guards and the move modulo
`modulus`. Two iterations of one class give the same requests at the same cost, so the
survey computes one and reuses it for the others; where an address or a guard mixes a
loop's counter with a unit's (the scan's `ai = off * (2 * t + 1) - 1`) the loop is told
apart iteration by iteration, as before. The classes are exact, not sampled: the survey's
figures are those of the full walk (tests/feedback/test_conflict_classes.py compares
both).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import sympy

from mcl.feedback.facts.kernel import Guard, Loop
from mcl.feedback.facts.layout import element_layout, flat_index
from mcl.feedback.kernel_api import Kernel, MemoryInstruction, MissingValues, NotStatic

# The alignments the survey's request costs read besides the banks: a merged 64-bit pair
# (8 bytes) and the widest access a lane's neighbouring words are read with (16 bytes;
# mcl.feedback.lockstep.WIDE_ACCESS_BYTES).
ALIGNMENT_BYTES = 16


@dataclass(frozen=True)
class IterationClasses:
    """How to name the class of the survey's current iteration of `loops` (the loops it
    follows): `kept`, the loops whose positions stay in the key; `uniform`, the guards
    decided alike for every lane; `shift`, the part of the address (elements) that moves
    every lane alike, in the loops not kept; `record`, the bytes of one element; `modulus`,
    the bytes of a move that changes nothing (None: only an equal move does, the address
    not known to be whole)."""

    kept: tuple[Loop, ...]
    uniform: tuple[Guard, ...]
    shift: Any
    record: int
    modulus: int | None

    @classmethod
    def of(cls, kernel: Kernel, instruction: MemoryInstruction, loops: Sequence[Loop],
           banks: int, word_bytes: int) -> IterationClasses | None:
        """The classes of the iterations of `loops` for `instruction`; None where every
        iteration is its own class (no loop moves the lanes alike)."""
        access = instruction.access
        layout = element_layout(kernel.facts, access.binding, access.field)
        if layout is None or not loops:
            return None
        symbolic = kernel.facts.evaluator
        item = access.item
        counters = {symbolic.counter(loop) for loop in kernel.facts.loops}
        by_counter = {symbolic.counter(loop): loop for loop in loops}
        # A fill loop, the innermost, is walked through inside one iteration's cost (the
        # wide accesses): it stays apart, so that a class moves every one of its words alike.
        movable = set(by_counter) - {symbolic.counter(loop) for loop in item.loops[-1:]}
        address = sympy.sympify(flat_index(kernel.facts, access)) if access.element \
            else sympy.Integer(0)
        terms = sympy.Add.make_args(address)
        conditions = []
        for guard in item.guards:
            condition = symbolic.sym(guard.cond, guard.scope)
            symbols = sympy.sympify(condition).free_symbols if condition is not None \
                else set()
            conditions.append((guard, symbols & counters))
        parts = [term.free_symbols for term in terms] + [s for _, s in conditions]
        changed = True
        while changed:  # a loop mixed with any other symbol is told apart
            changed = False
            for symbols in parts:
                if symbols & movable and not symbols <= movable:
                    movable -= symbols
                    changed = True
        if not movable:
            return None
        shift = sympy.Add(*(t for t in terms if t.free_symbols and t.free_symbols <= movable))
        rest = sympy.Add(*(t for t in terms if not t.free_symbols & movable))
        record = layout[0]
        whole = bool(rest.is_integer) and bool(shift.is_integer)
        return cls(tuple(loop for loop in loops if symbolic.counter(loop) not in movable),
                   tuple(g for g, s in conditions if s & movable), shift, record,
                   math.lcm(banks * word_bytes, ALIGNMENT_BYTES) if whole else None)

    def key(self, kernel: Kernel, point: dict[Loop, int]) -> Hashable | None:
        """The class of the iteration `point` (the followed loops' positions, where the
        evaluator is); None where it cannot be told without more values than the survey
        itself needs (the iteration is then computed)."""
        ev = kernel.evaluator
        positions = tuple(point[loop] for loop in self.kept)
        try:
            truths = tuple(ev.holds((guard,)) for guard in self.uniform)
            moved = ev.number(self.shift) * self.record
        except (MissingValues, NotStatic, ArithmeticError):
            return None
        if self.modulus is not None and isinstance(moved, int):
            moved %= self.modulus
        return positions, truths, moved
