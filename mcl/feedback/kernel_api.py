"""The `Kernel` object that performance feedback functions receive (the paper's 6.5).

"It takes as input a Kernel data-structure and returns a string with a message for the
user [...]. The Kernel data-structure contains a Context, a set of Instructions, and the
variables from the hardware description." Here, in Python:

- `kernel.hwd`: values of the resolved description by path
  (`kernel.hwd.value("smps.smp.on_chip.capacity")` -> 49152) and slots of execution units
  (`kernel.hwd.slots("smps.smp", "block")` -> 8); `kernel.hwd.description` is the full
  query API (`mcl.hdl.model.HardwareDescription`).
- `kernel.context`: what the kernel uses: bytes of a memory space per unit of the scope
  declaring it (`space_bytes("shared")`: shared memory per block), units of a par_group
  (`units("threads")`), units of one par_unit inside another (`units_per("thread",
  "block")`: threads per block), and an estimate of registers per thread.
- `kernel.instructions`: the memory instructions (loads and stores: space, executing
  par_unit, variable, index expressions, source span).
- `kernel.evaluator`: computes values from the program, interpreting only what a value
  needs ("An interpreter interprets exactly those statements in the MCPL program that are
  needed to compute the size"): parameters come from `-D` values, host statements such as
  `int nrBlocksM = m / nrThreadsM;` are followed, for-loops start at their first
  iteration, and foreach units are stepped with `reset()` / `increment()` ("The
  interpreter interprets for-loops, but not foreach-statements").

A value that needs a parameter the user did not give raises `MissingValues` naming it;
the compiler turns that into a warning ("it needs a value for v to complete the
analysis"). A value that depends on array contents raises `NotStatic`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import sympy

from mcl.diagnostics import Span
from mcl.feedback.budget import OutOfTime, spent
from mcl.feedback.emit import fill
from mcl.feedback.exact import Exact, as_sympy, exact_function
from mcl.feedback.facts.kernel import Access, DeclaredName, Guard, KernelFacts, Loop
from mcl.feedback.facts.layout import element_count, element_layout, flat_index, type_bytes
from mcl.feedback.messages import FeedbackSeverity, Message
from mcl.feedback.values import evaluate
from mcl.hdl.model import DeviceNode, HardwareDescription, Quantity
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr

ANALYSIS = "functions"
Number = int | float


class MissingValues(Exception):
    """A value needs parameters the user did not give (`-D NAME=VALUE`)."""

    def __init__(self, names: Iterable[str]):
        self.names = tuple(sorted(set(names)))
        super().__init__("needs a value for " + ", ".join(self.names))


class NotStatic(Exception):
    """A value depends on data (array contents, variables written in the kernel)."""


def number(x: Any) -> Number:
    """A SymPy number as int (when integral) or float."""
    value = sympy.sympify(x)
    if value == sympy.oo:
        return math.inf
    if value.is_Integer or (value.is_number and value == sympy.floor(value)):
        return int(value)
    return float(value)


def evaluated_number(value: Any) -> Number:
    """`number` of what `NumericEvaluator._evaluate` returns: a compiled expression's int or
    Fraction directly (`number` of its SymPy form gives the same), SymPy's value as
    `number` takes it."""
    if type(value) is int:
        return value
    if type(value) is Fraction:
        return value.numerator if value.denominator == 1 else float(value)
    return number(as_sympy(value) if type(value) is bool else value)


# ----------------------------------------------------------------------------- hardware


class HardwareValues:
    """The resolved description as a feedback function sees it: plain numbers by path."""

    def __init__(self, description: HardwareDescription):
        self.description = description
        self.name = description.name

    def quantity(self, path: str) -> Quantity | bool | str | None:
        return self.description.value(path)

    def value(self, path: str) -> Number | bool | str | None:
        """`value("smps.smp.on_chip.capacity")` -> 49152 (bytes; units are normalised, see
        mcl.hdl.model); None when the description has no such property."""
        q = self.description.value(path)
        if isinstance(q, Quantity):
            v = q.value
            return int(v) if isinstance(v, float) and v.is_integer() else v
        return q

    def node(self, path: str) -> DeviceNode | None:
        return self.description.node(path)

    def slots(self, path: str, par_unit: str) -> Number | None:
        """Slots of execution unit/group `path` for `par_unit` (`slots(block, 8)` -> 8)."""
        node = self.description.node(path)
        return node.slots_for(par_unit) if node is not None else None


# ----------------------------------------------------------------------------- instructions


@dataclass(frozen=True)
class MemoryInstruction:
    """A load or store of an array element (or of a scalar in addressable memory)."""

    kind: str  # "load" or "store"
    space: str
    unit: str | None  # the executing par_unit; None for host code
    variable: str
    text: str  # the access as written, e.g. "b[k, j]"
    indices: tuple[ast.Expr, ...]
    element_bytes: int | None  # bytes one access touches (None: not known statically)
    span: Span | None
    access: Access

    @property
    def is_memory(self) -> bool:  # the paper's Instruction API asks this
        return True

    def __str__(self) -> str:
        return f"{self.kind} {self.text} ({self.space})"


def memory_instructions(facts: KernelFacts) -> list[MemoryInstruction]:
    out = []
    for access in facts.accesses:
        unit = _executing_unit(facts, access.item.loops)
        layout = element_layout(facts, access.binding, access.field) if access.element else None
        size = layout[1] if layout else (
            type_bytes(facts, access.binding.type, access.binding.scope)
            if not access.element else None)
        for kind, present in (("load", access.reads), ("store", access.writes)):
            if present:
                out.append(MemoryInstruction(
                    kind, access.space or "", unit, access.binding.root.name,
                    print_expr(access.node), access.indices, size, access.node.span, access))
    return out


def _executing_unit(facts: KernelFacts, loops: tuple[Loop, ...]) -> str | None:
    foreach = [loop for loop in loops if loop.kind == "foreach"]
    if not foreach:
        return None
    group = facts.hwd.par_group(foreach[-1].group or "")
    return group.unit.name if group is not None and group.unit is not None else None


# ----------------------------------------------------------------------------- evaluator


def _difference(rel: Any) -> tuple[str, Any] | None:
    """(operator, lhs - rhs) of a comparison of two numeric expressions, else None."""
    if isinstance(rel, sympy.core.relational.Relational) and rel.rel_op in _SIGN_HOLDS \
            and isinstance(rel.lhs, sympy.Expr) and isinstance(rel.rhs, sympy.Expr):
        return rel.rel_op, rel.lhs - rel.rhs
    return None


def _sign(x: Any) -> int | None:
    """-1, 0 or 1 for a finite real SymPy number, or for the int or Fraction of a
    compiled expression; None for anything else."""
    if type(x) is int or type(x) is Fraction:
        return (x > 0) - (x < 0)
    if isinstance(x, bool):
        return None
    if x.is_Rational:
        p = x.p
    elif x.is_Float and x.is_finite:
        p = float(x)
    else:
        return None
    return (p > 0) - (p < 0)


_SIGN_HOLDS = {"<": lambda s: s < 0, "<=": lambda s: s <= 0, ">": lambda s: s > 0,
               ">=": lambda s: s >= 0, "==": lambda s: s == 0, "!=": lambda s: s != 0}


def unit_positions(position: int, counts: Sequence[int]) -> list[int]:
    """Each loop's position for the unit at `position` of loops with `counts` iterations
    (0-based, the innermost loop fastest; a loop of no or one iteration stays at 0)."""
    return [column[0] for column in unit_columns([position], counts)]


def unit_columns(units: Sequence[int], counts: Sequence[int]) -> list[list[int]]:
    """`unit_positions` of each of `units`, loop by loop: for each loop, its position at
    each unit. A loop's position is the unit's position divided by the units of the loops
    inside it, modulo its own count (a warp's lanes are placed one comprehension per loop,
    not one division chain per lane)."""
    columns: list[list[int]] = []
    inner = 1  # the units of the loops inside this one
    for count in reversed(counts):
        count = count if count > 1 else 1
        columns.append([unit // inner % count for unit in units] if count > 1
                       else [0] * len(units))
        inner *= count
    columns.reverse()
    return columns


class UnitCursor:
    """Steps through the units of the foreach statements over one par_group (nested ones
    count as one multi-dimensional space, the innermost fastest, so the first 32 steps
    are the first 32 threads of a warp)."""

    def __init__(self, evaluator: NumericEvaluator, group: str, loops: list[Loop]):
        self.evaluator = evaluator
        self.group = group
        self.loops = loops

    @property
    def counts(self) -> list[int]:
        return self.evaluator.trip_counts(self.loops)

    @property
    def count(self) -> int:
        return math.prod(self.counts)

    @property
    def index(self) -> int:
        """The position of the current unit (0-based, innermost dimension fastest)."""
        position = 0
        for loop, count in zip(self.loops, self.counts, strict=True):
            position = position * count + self.evaluator.position(loop)
        return position

    def reset(self) -> None:
        for loop in self.loops:
            self.evaluator.set_position(loop, 0)

    def seek(self, position: int) -> None:
        """Move to the unit at `position` (0-based, innermost dimension fastest)."""
        # every count is read before any loop moves: a count may depend on another's position
        for loop, here in zip(self.loops, unit_positions(position, self.counts), strict=True):
            self.evaluator.set_position(loop, here)

    def increment(self) -> bool:
        """Move to the next unit; False (and back to the first unit) after the last one."""
        for loop, count in reversed(list(zip(self.loops, self.counts, strict=True))):
            nxt = self.evaluator.position(loop) + 1
            if nxt < count:
                self.evaluator.set_position(loop, nxt)
                return True
            self.evaluator.set_position(loop, 0)
        return False


# Evaluations between two readings of the budget's clock (mcl.feedback.budget): reading
# the thread's CPU time is a system call, which costs as much as an evaluation compiled by
# mcl.feedback.exact, and a lock-step walk makes thousands.
CLOCK_EVERY = 16


class NumericEvaluator:
    """Numbers from the program, computed on demand (paper 6.5)."""

    def __init__(self, facts: KernelFacts, values: Mapping[str, Number]):
        self.facts = facts
        self.values = dict(values)
        self._positions: dict[Loop, int] = {}
        self._counters = {facts.evaluator.counter(loop): loop for loop in facts.loops}
        self._conditions: dict[Guard, tuple[Any, tuple[str, Any] | None]] = {}
        self._compiled: dict[Any, tuple[Exact, tuple[Loop, ...]] | None] = {}
        self._symbols: dict[Any, tuple[Any, ...]] = {}
        self._exact_values = dict(self.values)
        self._trips: dict[Loop, int] = {}
        self._evaluations = 0

    # -- state --------------------------------------------------------------------------
    def position(self, loop: Loop) -> int:
        return self._positions.get(loop, 0)

    def set_position(self, loop: Loop, position: int) -> None:
        self._positions[loop] = position

    def moved(self) -> frozenset[tuple[Loop, int]]:
        """The loops away from their first iteration, with their positions."""
        return frozenset((loop, p) for loop, p in self._positions.items() if p)

    def iteration(self, loop_var: str, k: int) -> None:
        """Evaluate as if for-loop `loop_var` were in its k-th iteration (default 0)."""
        for loop in self.facts.loops:
            if loop.kind == "for" and loop.name == loop_var:
                self.set_position(loop, k)

    def units(self, group: str, at: MemoryInstruction | None = None) -> UnitCursor:
        """A cursor over the units of par_group `group`: those around instruction `at`, or
        every foreach over `group` in the kernel."""
        loops = at.access.item.loops if at is not None else tuple(self.facts.loops)
        chosen = [loop for loop in loops if loop.kind == "foreach" and loop.group == group]
        if at is None:  # of several separate nests, step the first (and its inner loops)
            chosen = [loop for loop in chosen if not chosen or _nested(loop, chosen[0])]
        return UnitCursor(self, group, chosen)

    def reset(self, group: str) -> None:
        self.units(group).reset()

    def increment(self, group: str) -> bool:
        return self.units(group).increment()

    # -- values -------------------------------------------------------------------------
    def trips(self, loop: Loop) -> int:
        self._check_values()
        if loop in self._trips:
            return self._trips[loop]
        expr = sympy.sympify(self.facts.evaluator.shape(loop).trips)
        count = int(self.number(expr))
        # A cursor asks every loop's count at every step of a warp's lanes; a count that
        # no other loop's position changes is the same until the values change.
        if not expr.free_symbols & self._counters.keys():
            self._trips[loop] = count
        return count

    def trip_counts(self, loops: Sequence[Loop]) -> list[int]:
        """`trips` of each of `loops`: what a cursor asks at every lane it moves to, so the
        values are checked once and the kept counts read without a call each."""
        self._check_values()
        kept = self._trips
        return [kept[loop] if loop in kept else self.trips(loop) for loop in loops]

    def value(self, what: str | ast.Expr, at: MemoryInstruction | None = None) -> Number:
        """The value of a name or expression, where instruction `at` executes (the
        function's outermost declarations when `at` is None)."""
        if isinstance(what, str):
            binding = self._binding(what, at)
            if binding is None:
                raise KeyError(f"no variable '{what}' in {self.facts.function.name}")
            return self.number(self.facts.evaluator.binding_value(binding))
        scope = at.access.item.scope if at is not None else self._outer_scope()
        return self.number(self.facts.evaluator.sym(what, scope))

    def address(self, instruction: MemoryInstruction) -> int:
        """Byte offset of the element `instruction` touches for the current units and
        iterations, from the start of its array."""
        access = instruction.access
        layout = element_layout(self.facts, access.binding, access.field)
        if layout is None:
            raise NotStatic(f"the element size of {instruction.variable} is not known")
        record, _, offset = layout
        index = self.number(flat_index(self.facts, access)) if access.element else 0
        return int(index) * record + offset

    # -- lanes together -------------------------------------------------------------------
    # A lock-step walk asks the same question (a guard, an address) of every lane of a
    # warp. Where the expression is compiled (mcl.feedback.exact) its lanes are computed
    # in one `map` over the lanes' loop positions instead of moving the cursor and
    # evaluating lane by lane; the answers are those of the lane-by-lane path, which
    # remains for what is not compiled (and decides a lane the compiled function cannot).

    def holds_each(self, cursor: UnitCursor, units: Sequence[int],
                   guards: Sequence[Guard]) -> list[bool | None]:
        """`holds(guards)` at each of `units` (positions of `cursor`). The cursor's loops
        are left anywhere: the caller resets them."""
        results: list[bool | None] = [True] * len(units)
        pending = list(range(len(units)))  # the lanes no guard has ruled out yet
        for guard in guards:
            if not pending:
                break
            decided = self._decide_each(cursor, [units[i] for i in pending], guard)
            still = []
            for i, value in zip(pending, decided, strict=True):
                if value is None:
                    results[i] = None
                    still.append(i)
                elif value != guard.then:
                    results[i] = False
                else:
                    still.append(i)
            pending = still
        return results

    def addresses_each(self, cursor: UnitCursor, units: Sequence[int],
                       instruction: MemoryInstruction) -> list[int]:
        """`address(instruction)` at each of `units` (positions of `cursor`)."""
        access = instruction.access
        layout = element_layout(self.facts, access.binding, access.field)
        if not units or layout is None or not access.element:
            return [self._address_at(cursor, unit, instruction) for unit in units]
        record, _, offset = layout
        values = self._compiled_each(cursor, units, flat_index(self.facts, access))
        if values is None:
            return [self._address_at(cursor, unit, instruction) for unit in units]
        return [int(evaluated_number(value)) * record + offset for value in values]

    def values_each(self, cursor: UnitCursor, units: Sequence[int], expr: Any
                    ) -> list[Number]:
        """`number(expr)` at each of `units` (positions of `cursor`)."""
        values = self._compiled_each(cursor, units, expr) if units else None
        if values is None:
            found = []
            for unit in units:
                cursor.seek(unit)
                found.append(self.number(expr))
            return found
        return [evaluated_number(value) for value in values]

    def _address_at(self, cursor: UnitCursor, unit: int, instruction: MemoryInstruction
                    ) -> int:
        cursor.seek(unit)
        return self.address(instruction)

    def _decide_each(self, cursor: UnitCursor, units: list[int], guard: Guard
                     ) -> list[bool | None]:
        """The condition of `guard` at each of `units`: True, False, or None where
        `holds` takes it as undecided."""
        rel, difference = self._condition(guard)
        if rel is None or any(self.facts.evaluator.is_opaque(s) for s in self._free(rel)):
            # not expressed, or on data (`probe[mid] <= bs`): undecided at every lane, as
            # `_truth` finds lane by lane
            return [None] * len(units)
        if difference is not None:
            op, expr = difference
            values = self._compiled_each(cursor, units, expr)
            if values is not None and all(type(v) is int or type(v) is Fraction
                                          for v in values):
                return [_SIGN_HOLDS[op]((v > 0) - (v < 0)) for v in values]
        else:
            values = self._compiled_each(cursor, units, rel)
            if values is not None and all(type(v) is bool for v in values):
                return list(values)
        out: list[bool | None] = []
        for unit in units:
            cursor.seek(unit)
            out.append(self._truth(guard))
        return out

    def _compiled_each(self, cursor: UnitCursor, units: Sequence[int], expr: Any
                       ) -> list[Any] | None:
        """The compiled value of `expr` at each of `units`; None where it is not compiled,
        a trip count of the cursor's loops depends on another loop's position, or a lane
        needs SymPy's answer (a division by zero)."""
        if not isinstance(expr, sympy.Basic):
            expr = sympy.sympify(expr)
        exact = self._exact(expr)
        counts = self.trip_counts(cursor.loops)
        if exact is None or not all(loop in self._trips for loop in cursor.loops):
            return None
        self._evaluations += len(units)
        # A function may compute thousands of values (a warp's lanes for each `if` of a
        # deep nest), too many steps for the budget to interrupt: each asks it.
        if spent():
            raise OutOfTime
        function, loops = exact
        # as UnitCursor.seek places a unit
        columns = dict(zip(cursor.loops, unit_columns(units, counts), strict=True))
        arguments = [columns[loop] if loop in columns
                     else [self._positions.get(loop, 0)] * len(units) for loop in loops]
        try:
            return list(map(function, *arguments)) if loops else \
                [function()] * len(units)
        except ArithmeticError:
            return None

    def number(self, expr: Any) -> Number:
        """A SymPy expression of the kernel as a number, with the user's values and the
        current positions of the loops. A compiled expression's value becomes the number
        without a SymPy number built and taken apart for every lane."""
        return evaluated_number(self._evaluate(expr))

    def holds(self, guards: Iterable[Guard]) -> bool | None:
        """Do the statements under `guards` run for the current units and iterations?
        True or False when every condition is decided there, None when one depends on
        data or cannot be expressed (the caller then assumes they run)."""
        result: bool | None = True
        for guard in guards:
            value = self._truth(guard)
            if value is None:
                result = None
            elif value != guard.then:
                return False
        return result

    def _truth(self, guard: Guard) -> bool | None:
        """The condition of `guard` for the current units and iterations as a bool; None
        where it depends on data or is not decided."""
        try:
            value = self._decide(guard)
        except NotStatic:
            return None
        return None if value is not sympy.true and value is not sympy.false \
            else value is sympy.true

    def _decide(self, guard: Guard) -> Any:
        """The condition of `guard` for the current units and iterations: sympy.true or
        sympy.false when decided. A comparison is decided from the sign of the difference
        of its sides: a warp's lanes decide each `if` once per lane, and building a
        SymPy relation of two numbers costs five times more."""
        rel, difference = self._condition(guard)
        if rel is None:
            return None
        if difference is not None:
            op, expr = difference
            sign = _sign(self._evaluate(expr))
            if sign is not None:
                return sympy.true if _SIGN_HOLDS[op](sign) else sympy.false
        return self.substitute(rel)

    def _condition(self, guard: Guard) -> tuple[Any, tuple[str, Any] | None]:
        """The condition of `guard` (None where it cannot be expressed) and, for a
        comparison, (operator, difference of its sides)."""
        if guard not in self._conditions:
            rel = self.facts.evaluator.sym(guard.cond, guard.scope)
            self._conditions[guard] = (rel, _difference(rel))
        return self._conditions[guard]

    def substitute(self, expr: Any) -> Any:
        """`expr` with the user's values and the current positions of the loops put in:
        a number, or a truth value for a condition."""
        value = self._evaluate(expr)
        return as_sympy(value) if isinstance(value, (int, Fraction)) else value

    def _evaluate(self, expr: Any) -> Any:
        """`substitute`, except that a compiled expression's value stays the Python int,
        Fraction or bool that mcl.feedback.exact computes."""
        self._evaluations += 1
        if self._evaluations % CLOCK_EVERY == 1 and spent():
            raise OutOfTime
        if not isinstance(expr, sympy.Basic):
            expr = sympy.sympify(expr)
        exact = self._exact(expr)
        if exact is not None:
            function, loops = exact
            positions = self._positions
            try:
                return function(*[positions.get(loop, 0) for loop in loops])
            except ArithmeticError:
                pass  # a division by zero: SymPy's answer (zoo, nan) below
        return self._substitute(expr)

    def _exact(self, expr: Any) -> tuple[Exact, tuple[Loop, ...]] | None:
        """`expr` compiled (mcl.feedback.exact) as a function of the positions of the
        loops it depends on, with the user's values in; None where it is not compiled
        (it depends on data, misses a value, or has a part SymPy must compute). Kept by
        expression for as long as the values stay: a lock-step walk evaluates a few
        expressions at every lane."""
        self._check_values()
        if expr in self._compiled:
            return self._compiled[expr]
        loops: dict[Any, Loop] = {}
        constants: dict[Any, int] = {}
        for s in expr.free_symbols:
            loop = self._counters.get(s)
            if loop is not None:
                loops[s] = loop
            elif self.facts.evaluator.is_opaque(s) or s.name not in self.values:
                # `_substitute` raises the error, which says which; kept as not compiled
                # like the others (a condition on data is asked at every lane)
                break
            elif type(value := self.values[s.name]) is int:  # not a bool, not a float
                constants[s] = int(value)
            else:
                break  # a float: SymPy rounds, step by step
        else:
            function = exact_function(expr, list(loops), constants)
            found = (function, tuple(loops.values())) if function is not None else None
            self._compiled[expr] = found
            return found
        self._compiled[expr] = None
        return None

    def _check_values(self) -> None:
        """Forget what was computed with values a feedback function has since changed."""
        if self.values != self._exact_values:
            self._exact_values = dict(self.values)
            self._compiled.clear()
            self._trips.clear()

    def _free(self, expr: Any) -> tuple[Any, ...]:
        """The free symbols of `expr`, found once: a lock-step walk asks about the same
        few expressions at every lane of every warp (SymPy walks the whole tree at every
        call; values do not change them)."""
        symbols = self._symbols.get(expr)
        if symbols is None:
            symbols = self._symbols[expr] = tuple(getattr(expr, "free_symbols", ()))
        return symbols

    def _substitute(self, expr: Any) -> Any:
        """`substitute` through SymPy, for every expression."""
        subs: dict[Any, Any] = {}
        missing: set[str] = set()
        # in name order: the first opaque symbol is the one the message names, the same
        # in every process (a set of symbols iterates in the order of their hashes)
        for s in sorted(self._free(expr), key=lambda s: s.name):
            loop = self._counters.get(s)
            if loop is not None:
                subs[s] = self.position(loop)
            elif self.facts.evaluator.is_opaque(s):
                # the variable written from data, or just data (the evaluator's marker
                # for a value read from an array: no name of the user's)
                raise NotStatic("the value depends on data" +
                                ("" if s.name == "data" else f" ({s.name})"))
            elif s.name in self.values:
                subs[s] = sympy.sympify(self.values[s.name])
            else:
                missing.add(s.name)
        if missing:
            raise MissingValues(missing)
        # xreplace: a plain symbol-for-number replacement, much faster than subs
        try:
            result = sympy.sympify(expr.xreplace(subs)) if subs else expr
        except (ValueError, TypeError) as exc:
            # SymPy refuses a Min or Max of an undefined value (nan, from a division by
            # zero at hostile sizes such as nrows = -1): no number to decide with
            raise NotStatic("the value is undefined at these sizes") from exc
        if result.free_symbols:  # a counter inside another loop's trip count, ...
            result = self.substitute(result)
        return result

    def _binding(self, name: str, at: MemoryInstruction | None) -> DeclaredName | None:
        if at is not None:
            return at.access.item.scope.named(name)
        candidates = [b for b in self.facts.bindings if b.name == name]
        candidates.sort(key=lambda b: len(b.loops))  # the outermost declaration first
        return candidates[0] if candidates else None

    def _outer_scope(self) -> Any:
        params = self.facts.params
        if not params:
            return None
        last = params[-1]
        return last.scope.declare(last) if last.scope is not None else None


def _nested(loop: Loop, outer: Loop) -> bool:
    return loop is outer or outer in loop.parents


# ----------------------------------------------------------------------------- context


# The compiler's count over the estimate of `Context.estimated_registers_per_thread` on
# the kernels it was held against (docs/validation.md, "Theoretical occupancy": the
# shipped hopper kernels and the unseen ones of round 4, 5 vs 32 at worst): the estimate
# says no more than that the count lies in this range of it.
ESTIMATE_RANGE = (0.5, 6.5)


@dataclass(frozen=True)
class Estimate:
    """A figure the compiler can only estimate, with what it is based on."""

    value: int
    basis: str
    # the compiler's own figure (NVRTC's register count), not an estimate of it
    counted: bool = False

    def __int__(self) -> int:
        return self.value


class Context:
    """What the kernel uses (paper 6.5: `getSizeMemorySpace`, the sizes of par_groups)."""

    def __init__(self, facts: KernelFacts, evaluator: NumericEvaluator):
        self.facts = facts
        self.evaluator = evaluator

    def space_bytes_expr(self, space: str) -> Any:
        """Bytes declared in `space` (SymPy), per unit of the scope that declares the space
        (shared memory: per block). Every declaration counts once, even inside a loop."""
        total = sympy.Integer(0)
        for b in self.facts.bindings:
            if b.kind not in ("local", "param") or b.storage is not None or b.space != space:
                continue
            layout = element_layout(self.facts, b) if b.is_array else None
            if b.is_array and layout is not None:
                total += element_count(self.facts, b) * layout[0]
            elif not b.is_array:
                size = type_bytes(self.facts, b.type, b.scope)
                total += size or 0
        return sympy.expand(total)

    def space_bytes(self, space: str) -> int:
        return int(self.evaluator.number(self.space_bytes_expr(space)))

    def units_expr(self, group: str) -> Any:
        """Units of par_group `group` per unit around it: the product of the counts of
        nested foreach statements over it (the largest nest when there are several)."""
        best = sympy.Integer(1)
        for loop in self.facts.loops:
            if loop.kind != "foreach" or loop.group != group:
                continue
            if any(p.kind == "foreach" and p.group == group for p in loop.parents):
                continue  # counted with its outermost foreach over the same group
            size = self.facts.evaluator.shape(loop).trips
            for inner in self.facts.loops:
                if inner.group == group and loop in inner.parents:
                    size *= self.facts.evaluator.shape(inner).trips
            best = size if best == 1 else sympy.Max(best, size)
        return best

    def units(self, group: str) -> int:
        return int(self.evaluator.number(self.units_expr(group)))

    def units_per(self, unit: str, outer: str) -> int:
        """Units of par_unit `unit` inside one unit `outer`: threads per block is
        `units_per("thread", "block")` (warps x threads on fermi)."""
        chain = self.facts.hwd.group_chain(unit)
        inside = False
        total = 1
        for group in chain:
            if inside:
                total *= self.units(group.name)
            if group.unit is not None and group.unit.name == outer:
                inside = True
        if not inside:
            raise KeyError(f"'{unit}' is not inside '{outer}' in {self.facts.hwd.name}")
        return total

    def registers_per_thread(self) -> Estimate:
        """NVIDIA's compiler's count where NVRTC can compile the kernel for its level
        (mcl.feedback.compiler_registers; `counted`), else an estimate: 32-bit words of
        the scalars and arrays the executing unit keeps in non-addressable memory
        (registers), its loop variables and foreach indices. The compiler may use more
        (temporaries) or fewer (values it folds, or loads again)."""
        from mcl.feedback.compiler_budget import NotCompiled
        from mcl.feedback.compiler_registers import compiler_registers

        counted = compiler_registers(self.facts)
        if isinstance(counted, NotCompiled):  # the estimate, and why not the count
            return self.estimated_registers_per_thread(
                f"the compiler's count not analysed: {counted.reason}")
        if counted is not None:
            return Estimate(counted, "NVIDIA's compiler (NVRTC's count for the kernel's "
                            "CUDA)", counted=True)
        return self.estimated_registers_per_thread()

    def estimated_registers_per_thread(self, not_counted: str = "") -> Estimate:
        """`registers_per_thread` without the compiler: the words of the register
        declarations and loop variables, an estimate (`ESTIMATE_RANGE`); `not_counted`
        says why the compiler gave no count where it was asked."""
        hwd = self.facts.hwd
        register_spaces = {s for m in hwd.memories() if not m.addressable for s in m.spaces}
        words = 0
        declarations = 0
        for b in self.facts.bindings:
            if b.kind not in ("local", "loop") or b.space not in register_spaces:
                continue
            if b.kind == "local" and not any(loop.kind == "foreach" for loop in b.loops):
                continue  # host code: computed before the kernel runs
            if b.is_array:
                layout = element_layout(self.facts, b)
                count = element_count(self.facts, b)
                if layout is None or count.free_symbols:
                    continue
                size = int(count) * layout[0]
            else:
                size = type_bytes(self.facts, b.type, b.scope) or 4
            words += max(1, -(-size // 4))
            declarations += 1
        # Measured against NVIDIA's compiler (docs/validation.md): it used more for matmul,
        # and half or less for convolution and spmv, where it loads a value again from
        # memory rather than keep a register copy of it.
        low, high = ESTIMATE_RANGE
        return Estimate(max(words, 1), f"{declarations} register declarations and loop "
                        f"variables, an estimate: the compiler used {low:g} to {high:g} times "
                        "such estimates (more for temporaries, fewer where it loads a copied "
                        "value again instead of keeping it); " + (
                            not_counted or "with nvidia-cuda-nvrtc installed the compiler's "
                            "own count is used"))


# ----------------------------------------------------------------------------- kernel


class Kernel:
    """Everything a performance feedback function may ask about one kernel."""

    def __init__(self, facts: KernelFacts, values: Mapping[str, Number],
                 node: DeviceNode | None = None, function_name: str = ""):
        self.facts = facts
        self.function = facts.function
        self.name = facts.function.name
        self.values = dict(values)
        self.node = node  # the block of the description that names the feedback function
        self.function_name = function_name
        self.hwd = HardwareValues(facts.hwd)
        self.evaluator = NumericEvaluator(facts, values)
        self.context = Context(facts, self.evaluator)
        self.instructions = memory_instructions(facts)

    def message(self, text: str, *, span: Span | None = None,
                severity: FeedbackSeverity | str = FeedbackSeverity.SUGGESTION,
                code: str | None = None,
                values: Mapping[str, Any] | None = None, hint: str | None = None,
                approximate: bool = False) -> Message:
        """A message for the user, attached to `span` (the kernel's function by default).
        `values` are the figures behind it (numbers or SymPy expressions); the text may
        show them as `{name}` or `{name:singular|plural}` (`mcl.feedback.emit.fill`),
        and a report lists under the message only the values the text does not show."""
        figures = {k: evaluate(v, self.values) for k, v in (values or {}).items()}
        rendered, shown = fill(text, figures)
        return Message(FeedbackSeverity(severity), ANALYSIS,
                       code or f"function-{self.function_name}",
                       rendered, span or self.function.span, tuple(figures.items()),
                       self.name, (), approximate, hint, shown)
