"""What a function costs: its instructions, loads and stores per category, executing unit
and memory space, each multiplied by how many times it runs (paper section 6.2; the
categories are explained in mcl.feedback.analyses.opstats, which reports them).

`OperationCosts` and `Executions` are derived once per function and shared: the
operation statistics, the roofline and the lock-step walk of the feedback functions all
count with them. Calls are counted through the callee's own costs ("the call-graph is
analyzed from the leaves up").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import sympy

from mcl.feedback.facts.blocks import CONTROL_FLOW, INDEXING, UNUSED, classify
from mcl.feedback.facts.counting import least_or_most, tidy
from mcl.feedback.facts.guard_values import branch_runs
from mcl.feedback.facts.kernel import (
    COND,
    IF,
    INDEX,
    STEP,
    VALUE,
    DeclaredName,
    Derived,
    Guard,
    Item,
    KernelFacts,
)
from mcl.feedback.facts.nest_counts import guarded_count
from mcl.feedback.facts.symbolic import param_symbol
from mcl.identity import Ref
from mcl.mcpl import ast

COMPUTATIONAL, DATA, INDEXING_OPS, CONTROL_OPS = "computational", "data", "indexing", "control"
# Loads and stores of output-defining blocks to registers (a space no addressable memory
# holds: `float[4] sums;` in a thread, `reg` arrays): counted apart, never memory traffic.
REGISTERS = "registers"
HOST = "host"

# (category, kind, unit, space key) -> count; kind is "arith", "load" or "store"; the
# space key is ("space", NAME), or ("param", NAME) for a parameter (a callee's parameter
# takes the space of the caller's argument).
Key = tuple[str, str, str, Any]
GuardKey = tuple[Ref[ast.If], bool]  # an `if` (the place, not its text) and a branch


@dataclass
class Costs:
    """The counts of a function: its operations and accesses, and what was approximated."""

    entries: dict[Key, Any] = field(default_factory=lambda: defaultdict(lambda: sympy.Integer(0)))
    approximations: list[tuple[Any, str]] = field(default_factory=list)  # (span, why)
    # the `if`s whose effect the counts could not collapse, by (if, branch)
    unresolved: dict[GuardKey, Guard] = field(default_factory=dict)
    # those that, at the sizes given, take the same branch in every iteration
    decided: dict[GuardKey, Guard] = field(default_factory=dict)
    # for one branch of an if/else counted apart: the function's costs, where each key
    # takes its place in the statements' order (the roofline lists the spaces so)
    whole: Costs | None = None
    # the lower bound (`least`): every branch not decided counted at its smaller count
    least: bool = False

    def add(self, key: Key, count: Any) -> None:
        if self.whole is not None:
            self.whole.add(key, sympy.Integer(0))
        self.entries[key] = self.entries[key] + count

    def undecided(self) -> list[Guard]:
        """The `if`s whose branches the counts could not decide (at the sizes given), in
        the order of their lines: where there are any, these counts and those of the
        other bound differ."""
        return sorted((g for key, g in self.unresolved.items() if key not in self.decided),
                      key=lambda g: (g.span.line, g.span.column) if g.span else (0, 0))

    def total(self, category: str, kind: str | None = None, unit: str | None = None,
              space: str | None = None) -> Any:
        out = sympy.Integer(0)
        for (cat, k, u, s), n in self.entries.items():
            if cat == category and kind in (None, k) and unit in (None, u) and (
                    space is None or (s is not None and s[1] == space)):
                out += n
        return tidy(out)


Count = tuple[Any, bool, list[Guard]]  # how many times, exactly?, the guards not counted


@dataclass(frozen=True)
class Executions(Derived):
    """How many times the items of one function run, each counted once: by item, and by
    place (the statements of one body run equally often)."""

    by_item: dict[Item, Count] = field(default_factory=dict)
    # (loops, guards, header kind, header loop) -> count
    by_place: dict[tuple[Any, ...], tuple[Any, bool, Any]] = field(default_factory=dict)

    @classmethod
    def derive(cls, facts: KernelFacts) -> Executions:
        return cls()


@dataclass(frozen=True)
class OperationCosts(Derived):
    """The costs of one function, and those at each set of values given (an `if` decided
    by the values changes them), and of each bound (`function_costs`' `least`)."""

    costs: Costs
    at_values: dict[tuple[bool, str], Costs] = field(default_factory=dict)
    # the `if`s decided at each set of values (`_decided`), asked again for each part
    decided_at: dict[str, dict[GuardKey, bool]] = field(default_factory=dict)

    @classmethod
    def derive(cls, facts: KernelFacts) -> OperationCosts:
        return cls(_compute_costs(facts, {}))


def executions(facts: KernelFacts, item: Item) -> Count:
    """How many times an item runs: its loops' iterations that pass the `if`s around it;
    a loop condition runs once more than the body, a step once per iteration. Also
    returns the guards that could not be counted exactly (the count is then an upper
    bound)."""
    known = facts.get(Executions).by_item
    if item not in known:
        known[item] = _executions(facts, item)
    return known[item]


def executions_under(facts: KernelFacts, item: Item, guards: tuple[Guard, ...]) -> Any:
    """How many times an item would run under only `guards` of the `if`s around it (the
    outer ones: a body the compiler predicates runs, lanes off, wherever its `if` is
    reached; mcl.feedback.facts.issue_counts)."""
    return _executions(facts, item, guards)[0]


def _executions(facts: KernelFacts, item: Item, guards: tuple[Guard, ...] | None = None
                ) -> tuple[Any, bool, list[Guard]]:
    """`guards`: those to count under (the item's own where None)."""
    guards = item.guards if guards is None else guards
    ev = facts.evaluator
    weight: Any = 1
    exact_loop = True
    header = item.kind in (COND, STEP) and item.loop is not None
    if header:
        assert item.loop is not None
        shape = ev.shape(item.loop)
        weight = shape.trips + 1 if item.kind == COND else shape.trips
        exact_loop = shape.exact
    # The statements of one body run equally often: counted once (the loops, the guards
    # and, for a loop header, which header of which loop determine the count).
    place = (tuple(item.loops), tuple(guards), *((item.kind, item.loop) if header else ()))
    counts = facts.get(Executions).by_place
    if place not in counts:
        counts[place] = guarded_count(ev, item.loops, guards, weight)
    count, exact, unresolved = counts[place]
    return count, exact and exact_loop, list(unresolved)


def function_costs(facts: KernelFacts, values: Mapping[str, Any] | None = None,
                   least: bool = False) -> Costs:
    """The counts of a function. With `values`, an `if` the counts could not collapse
    symbolically but that takes the same branch in every iteration at those sizes (an
    edge guard of a tiled kernel at a multiple of the tile) is applied: its branch runs
    every time or never, and the counts are exact for sizes at which that holds.

    The `if`s left undecided (a condition on data, `if (flag[b] != 0)`) make the counts
    bounds: by default upper bounds (every statement of an `if` counted as if its branch
    always ran, an `if … else` as its larger branch); with `least`, lower bounds: each
    undecided `if` at the smaller count of its branches (the skip for one without
    `else`), what a lower bound such as the roofline's "at least" must be built from."""
    derived = facts.get(OperationCosts)
    costs = derived.costs
    if not costs.unresolved or (not values and not least):
        return costs
    # once per set of values and bound (opstats, the roofline and the time model ask)
    key = (least, str(sorted((values or {}).items())))
    if key not in derived.at_values:
        decided = _decided(facts, values) if values else {}
        derived.at_values[key] = _compute_costs(facts, decided, least=least) \
            if decided or least else costs
    return derived.at_values[key]


def _decided(facts: KernelFacts, values: Mapping[str, Any]) -> dict[GuardKey, bool]:
    """The branches of the `if`s the counts could not collapse that run always (True) or
    never (False) at `values`: found once per set of values (the time model asks for
    the counts of each phase of the function)."""
    derived = facts.get(OperationCosts)
    key = str(sorted(values.items()))
    if key not in derived.decided_at:
        decided: dict[GuardKey, bool] = {}
        for g in derived.costs.unresolved.values():
            runs = branch_runs(facts.evaluator, g, values)
            if runs is not None:
                decided[_guard_key(g)] = runs
        derived.decided_at[key] = decided
    return derived.decided_at[key]


def decided_by_data(facts: KernelFacts, guard: Guard) -> bool:
    """Does the condition of `guard` depend on a value only a run knows (an element read
    from memory, `if (flag[b] != 0)`), rather than on the sizes and the units' indices
    alone (an edge guard the counts could not collapse)?"""
    ev = facts.evaluator
    rel = ev.sym(guard.cond, guard.scope)
    return rel is None or any(ev.is_opaque(s) for s in getattr(rel, "free_symbols", ()))


def part_costs(facts: KernelFacts, values: Mapping[str, Any], items: set[Item],
               least: bool = False) -> Costs:
    """The counts of the statements `items` of a function alone (one part of it, as the
    time model's phases between barriers), by the rule of `function_costs`."""
    decided = _decided(facts, values) if values else {}
    return _compute_costs(facts, decided, items, least)


def _guard_key(g: Guard) -> GuardKey:
    return (Ref(g.node), g.then)


def _compute_costs(facts: KernelFacts, decided: Mapping[GuardKey, bool],
                   only: set[Item] | None = None, least: bool = False) -> Costs:
    """`decided`: the branches that run always (True) or never (False) at given sizes;
    `only`: the items to count (all where None); `least`: the lower bound
    (`function_costs`)."""
    kinds = classify(facts)
    costs = Costs(least=least)
    # The branches of the undecided `if … else`s counted as their larger branch (the
    # smaller for the lower bound): each branch apart, by (if, branch), then the larger
    # (smaller) of the two per key.
    larger = facts.get(LargerBranch).ifs
    branches: dict[GuardKey, Costs] = {}
    unit_name = facts.hwd.executing_unit().name
    for item in facts.items:
        block = kinds[item]
        if block == UNUSED or (only is not None and item not in only):
            continue
        count, exact, unresolved = executions(facts, item)
        known = [g for g in unresolved if _guard_key(g) in decided]
        costs.decided.update((_guard_key(g), g) for g in known)
        if any(not decided[_guard_key(g)] for g in known):
            continue  # a branch that never runs at these sizes
        unresolved = [g for g in unresolved if _guard_key(g) not in decided]
        unit = HOST if item.on_host else unit_name
        into = costs
        branch = bool(item.guards) and item.guards[-1] in unresolved \
            and Ref(item.guards[-1].node) in larger
        if branch:
            into = branches.setdefault(_guard_key(item.guards[-1]), Costs(whole=costs))
        _note_approximations(facts, item, unresolved, into, larger)
        if least and unresolved and not (branch and len(unresolved) == 1):
            # An undecided `if` may skip its branch in every unit: the lower bound
            # counts nothing under it (an `if … else` of LargerBranch alone takes the
            # smaller branch, below: every unit that runs it runs one of the two).
            continue
        for role, n in item.ops.items():
            if n:
                into.add((_category(block, role, "arith"), "arith", unit, None), n * count)
        for acc in item.accesses:
            key = _space_key(acc.binding)
            cat = _in_registers(facts, _category(block, acc.role, "access"), key)
            if acc.reads:
                into.add((cat, "load", unit, key), count)
            if acc.writes:
                into.add((cat, "store", unit, key), count)
        for call, role in item.calls:
            _add_call(facts, item, block, role, call, count, unit, into, least)
    _add_branches(costs, branches)
    return costs


def _add_branches(costs: Costs, branches: Mapping[GuardKey, Costs]) -> None:
    """Each undecided `if … else` adds, per key, the larger of its branches' counts (the
    smaller for the lower bound): every unit that runs the `if` runs one branch, so the
    larger per key bounds either path from above, the smaller from below."""
    for (ref, then), part in branches.items():
        other = branches.get((ref, not then), Costs())
        if not then and (ref, True) in branches:
            continue  # added with the then-branch
        for key in set(part.entries) | set(other.entries):
            a, b = part.entries.get(key, sympy.Integer(0)), other.entries.get(key, sympy.Integer(0))
            costs.add(key, least_or_most(costs.least, a, b))
        for both in (part, other):
            costs.approximations += both.approximations
            costs.unresolved.update(both.unresolved)


@dataclass(frozen=True)
class LargerBranch(Derived):
    """The `if … else`s of a function whose condition the counts cannot decide and whose
    branches each cost the same every time they run (no `if` inside them, no loop inside
    them whose iterations depend on the loops around the `if`, and a count the condition
    does not limit): those count as their larger branch, an upper bound of either path."""

    ifs: frozenset[Ref[ast.If]] = frozenset()

    @classmethod
    def derive(cls, facts: KernelFacts) -> LargerBranch:
        headers = {Ref(item.node): item for item in facts.items if item.kind == IF}
        inside: dict[Ref[ast.If], list[Item]] = defaultdict(list)
        for item in facts.items:
            for g in item.guards:
                inside[Ref(g.node)].append(item)
        return cls(frozenset(ref for ref, items in inside.items()
                             if ref.obj.orelse is not None and ref in headers
                             and all(_uniform(facts, headers[ref], item) for item in items)))


def _uniform(facts: KernelFacts, header: Item, item: Item) -> bool:
    """Whether `item`, in a branch of the `if` of `header`, costs the same every time the
    `if` runs and is counted as if every run of the `if` took its branch."""
    ev = facts.evaluator
    n = len(header.loops)
    if item.guards[:-1] != header.guards or item.loops[:n] != header.loops:
        return False  # inside another `if` within the branch
    around = {ev.counter(loop) for loop in header.loops}
    own = [*item.loops[n:], *([item.loop] if item.loop is not None else [])]
    if any(sympy.sympify(ev.trips(loop)).free_symbols & around for loop in own):
        return False
    count, _, unresolved = executions(facts, item)
    if item.guards[-1] not in unresolved:
        return False
    unguarded, _, _ = _executions(facts, item, item.guards[:-1])
    return bool(sympy.expand(count - unguarded) == 0)


def _category(block: str, role: str, what: str) -> str:
    """The category of an operation of a block. A load or store is a data access in
    every block: the element a histogram's bin is computed from (`int bin =
    toInt(v[i] * 64.0)`, an indexing block), a row's bounds read for a loop
    (`rowptr[i]`, control flow) move as many bytes and take as long as one whose value
    is stored; only the arithmetic around them is overhead (paper 6.2)."""
    if what == "access":
        return DATA
    if block == CONTROL_FLOW:
        return CONTROL_OPS
    if block == INDEXING:
        return INDEXING_OPS
    if what == "access":
        return DATA
    return {VALUE: COMPUTATIONAL, INDEX: INDEXING_OPS}.get(role, CONTROL_OPS)


def _in_registers(facts: KernelFacts, category: str, key: tuple[str, str]) -> str:
    """A data access to a space no addressable memory holds is a register access."""
    if category == DATA and key[0] == "space" and not facts.spaces.addressable(key[1]):
        return REGISTERS
    return category


def _space_key(b: DeclaredName) -> tuple[str, str]:
    root = b.root
    if root.kind == "param":
        return ("param", root.name)
    return ("space", root.space or "?")


def _add_call(facts: KernelFacts, item: Item, block: str, role: str, call: ast.Call,
              count: Any, unit: str, costs: Costs, least: bool) -> None:
    callee = facts.callee(call)
    if callee is None:
        return
    inner = function_costs(callee, least=least)
    subst = {}
    args: dict[str, ast.Expr] = {}
    for param, arg in zip(callee.function.params, call.args, strict=False):
        args[param.name] = arg
        if not isinstance(param.type, ast.ArrayType):
            subst[param_symbol(param.name, param.type)] = facts.evaluator.sym(arg, item.scope)
    for (cat, kind, _unit, key), n in inner.entries.items():
        if cat in (DATA, REGISTERS):
            new_cat = cat  # a data access in every block (`_category`)
        elif block == CONTROL_FLOW:
            new_cat = CONTROL_OPS
        elif block == INDEXING:
            new_cat = INDEXING_OPS
        elif cat == COMPUTATIONAL and role != VALUE:
            new_cat = INDEXING_OPS
        else:
            new_cat = cat
        if key is not None and key[0] == "param":
            actual = args.get(key[1])
            b = item.scope.lookup_root(actual) if actual is not None else None
            key = _space_key(b) if b is not None else ("space", "?")
            if key[1] != "?":
                new_cat = _in_registers(facts, new_cat, key)
        costs.add((new_cat, kind, unit, key), sympy.sympify(n).xreplace(subst) * count)
    for span, why in inner.approximations:
        costs.approximations.append((span, f"in {call.func}: {why}"))


def _note_approximations(facts: KernelFacts, item: Item, unresolved: list[Guard],
                        costs: Costs, larger: frozenset[Ref[ast.If]]) -> None:
    for guard in unresolved:
        costs.unresolved.setdefault(_guard_key(guard), guard)
        line = f" at line {guard.span.line}" if guard.span else ""
        why = (f"the if/else{line} is not decided: counted as its larger branch, per kind "
               "of operation (an upper bound of either path)"
               if Ref(guard.node) in larger else
               f"the if{line} may limit how often its statements run: counts inside it are "
               "upper bounds")
        costs.approximations.append((guard.span, why))
    loops = list(item.loops) + ([item.loop] if item.loop is not None else [])
    for loop in loops:
        shape = facts.evaluator.shape(loop)
        if not shape.exact:
            costs.approximations.append(
                (loop.span, f"{shape.reason or 'unknown iteration count'}: the count "
                            f"uses {shape.trips} for its iterations"))
