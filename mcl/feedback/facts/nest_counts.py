"""How often the statements of a loop nest run, kept from one analysis of the editor's
worker to the next.

The editor's worker analyses the kernel again at every edit, and an edit inside one loop
nest leaves the counts of every other nest as they were: a count is derived from the
loops' bounds, the guards' conditions and the statement's weight alone (paper section
6.2: "for all these blocks, the compiler finds the number of iterations they are
executed"). With the loop counters and stand-ins of the last analysis
(mcl.feedback.facts.stable_dummies), those come back as the same SymPy formulas, so
`guarded_count` keeps each count by them, across analyses, and a nest the edit did not
touch is not counted again. Two counts are kept: how often a statement runs
(`guarded_count`: the operation statistics, the roofline, the time model and the
lock-step walk count with it) and in how many iterations an access's element is loaded
again (`conditioned_count`: the data reuse findings).

The key is everything the counting (mcl.feedback.facts.counting) reads:

- each loop of the nest, outermost first: its kind and normalised shape (counter,
  variable, trip count, exactness, bounds);
- the conditions of the guards, each with the position of its guard (a count names the
  guards it could not count by position, so that the caller gets its own guards back);
- the weight;
- the function's loops as the counting sees them beside the nest: every loop's counter
  (a symbol that is no counter stands for a value known only at run time) and the
  for-loops whose trip counts have sizes in them (a grid-stride loop collapsed with the
  nest: `counting.symbolic_trips`). So an edit of the body of a nest, of a guard or of a
  statement counts that nest again, while one that adds, removes or renames a loop, or
  changes the header of a loop whose trip count has sizes in it, counts every nest of
  the function again.

Whether found here or counted, the same dummies are made in the same order: the guards'
conditions and every loop's shape are made before the key (they are all the counting
makes), so a later analysis step sees the same formulas as without this store
(tests/lsp/test_reused_dummies.py compares every message of a sequence of edits with
and without it). A count made after its budget took a fallback (mcl.feedback.budget) is
not kept: with time left, the next analysis finds the full one.

Outside `reused_dummies` (`mcl check`: one analysis per process, fresh dummies that no
later analysis meets) nothing is kept. Bounded (least recently used first out), and
emptied with SymPy's cache (mcl.lsp.worker.bound_caches): it holds SymPy's expressions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sympy

from mcl.feedback.budget import fallen_back
from mcl.feedback.facts.counting import (
    Condition,
    conditioned_iterations,
    conditions,
    guarded_iterations,
    symbolic_trips,
)
from mcl.feedback.facts.kept_results import KeptResults
from mcl.feedback.facts.kernel import Guard, Loop
from mcl.feedback.facts.stable_dummies import reusing
from mcl.feedback.facts.symbolic import SymbolicEvaluator
from mcl.mcpl.symbolic_values import forget_with_per_process

# Counts kept: a kernel has a few hundred places (sets of loops, guards and a weight),
# and the worker sees one kernel at a time.
MAX_KEPT = 4096

Count = tuple[Any, bool, list[Guard]]  # as guarded_iterations: count, exact?, guards left


store: KeptResults[Any] = KeptResults(MAX_KEPT)
forget_with_per_process(store)


def _position(guards: Sequence[Guard], guard: Guard) -> int:
    """Where `guard` (the object itself, not an equal one) first stands in `guards`: the
    key names a guard by its place, which the next job's equal nest shares."""
    return next(k for k, g in enumerate(guards) if g is guard)


def guarded_count(ev: SymbolicEvaluator, loops: Sequence[Loop], guards: Sequence[Guard],
                  weight: Any = 1) -> Count:
    """`guarded_iterations(ev, loops, guards, weight)` (a statement's executions), kept
    across the worker's analyses by what it depends on."""
    # What the count makes first, made here whether it is counted or found: the same
    # dummies, in the same order, either way.
    conds = conditions(ev, guards)
    ev.all_counters()
    if not (store.enabled and reusing()):
        return guarded_iterations(ev, loops, guards, weight)
    key = ("guarded", _nest(ev, loops),
           tuple((c.rel, c.holds, _position(guards, c.guard)) for c in conds),
           sympy.sympify(weight))

    def count() -> tuple[Any, bool, tuple[int, ...]]:
        value, exact, unresolved = guarded_iterations(ev, loops, guards, weight)
        return value, exact, tuple(_position(guards, g) for g in unresolved)

    value, exact, left = _kept(key, count)
    return value, exact, [guards[k] for k in left]


def conditioned_count(ev: SymbolicEvaluator, loops: Sequence[Loop],
                      conds: Sequence[Condition]) -> tuple[Any, bool]:
    """The count and exactness of `conditioned_iterations(ev, loops, conds)` (the
    iterations in which an access's element is loaded again), kept as `guarded_count`'s.
    The conditions' guards are only carried along by the counting, to name those left
    uncounted, which this count does not return: the key holds what they say alone."""
    ev.all_counters()
    if not (store.enabled and reusing()):
        value, exact, _ = conditioned_iterations(ev, loops, conds)
        return value, exact
    key = ("conditioned", _nest(ev, loops), tuple((c.rel, c.holds) for c in conds))

    def count() -> tuple[Any, bool]:
        value, exact, _ = conditioned_iterations(ev, loops, conds)
        return value, exact

    found: tuple[Any, bool] = _kept(key, count)
    return found


def _kept(key: tuple[Any, ...], count: Callable[[], Any]) -> Any:
    """The count kept under `key`, else `count()`, kept unless its budget fell back."""
    found = store.get(key)
    if found is not None:
        return found
    value = count()
    if not fallen_back():
        store.put(key, value)
    return value


def _nest(ev: SymbolicEvaluator, loops: Sequence[Loop]) -> tuple[Any, ...]:
    """The loops of a nest and those beside it, as the counting sees them."""
    return (tuple(shape_key(ev, loop) for loop in loops),
            ev.memo(("nest counts: beside", ), lambda: _beside(ev)))


def _beside(ev: SymbolicEvaluator) -> tuple[Any, ...]:
    """What the counting of any nest of `ev`'s function reads of its other loops."""
    return (ev.all_counters(), tuple(shape_key(ev, loop) for loop, _ in symbolic_trips(ev)))


def shape_key(ev: SymbolicEvaluator, loop: Loop) -> tuple[Any, ...]:
    """What the symbolic evaluator knows of a loop (its normalised shape), as a key: equal
    for the loop of the next analysis that an edit left as it was."""
    s = ev.shape(loop)
    return (loop.kind, s.counter, s.value, s.trips, s.exact, s.affine, s.reason, s.bounds)
