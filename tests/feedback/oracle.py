"""Compare the feedback analyses' symbolic figures with a brute-force trace (brute.py).

Each `check_*` function returns a list of human-readable mismatches (empty when all
agree), so one failing example reports everything that disagrees at once.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from brute import Trace

from mcl.feedback.facts.blocks import UNUSED, classify
from mcl.feedback.facts.costs import DATA, executions, function_costs
from mcl.feedback.facts.kernel import COND, COUNT, IF, INIT, STEP, STMT, KernelFacts
from mcl.feedback.facts.reuse import LoopReuse, RatioReuse, find_reuse, reuse_loops
from mcl.feedback.facts.sizes import parameter_bytes
from mcl.feedback.values import evaluate

_TRACE_KIND = {STMT: "stmt", IF: "if", INIT: "init", COND: "cond", STEP: "step",
               COUNT: "count"}


def _number(expr: Any, sizes: dict[str, int]) -> Any:
    return evaluate(expr, sizes).numeric


def check_executions(facts: KernelFacts, trace: Trace, sizes: dict[str, int]) -> list[str]:
    """Every item runs as often as the symbolic count says (at most, when approximate)."""
    problems = []
    for item in facts.items:
        count, exact, _ = executions(facts, item)
        value = _number(count, sizes)
        seen = trace.counts[(id(item.node), _TRACE_KIND[item.kind])]
        where = f"{item.kind} at {item.span} ({count})"
        if value is None:
            if exact:
                problems.append(f"{where}: exact count without a value")
            continue
        if exact and value != seen:
            problems.append(f"{where}: symbolic {value} != brute force {seen}")
        if not exact and value < seen:
            problems.append(f"{where}: upper bound {value} < brute force {seen}")
    return problems


def memory_accesses(facts: KernelFacts) -> dict[int, Any]:
    """The accesses to addressable memory of every block that runs (output-defining,
    indexing, control flow: a load whose value becomes an index or a loop bound moves
    its bytes all the same), by the id of their node."""
    kinds = classify(facts)
    return {id(a.node): a for a in facts.accesses
            if kinds[a.item] != UNUSED and facts.spaces.addressable(a.space)}


def traced_accesses(facts: KernelFacts, trace: Trace) -> dict[str, int]:
    """The loads and stores of `memory_accesses` the trace logged, by kind."""
    nodes = memory_accesses(facts)
    used = trace.per_slot()
    return {kind: sum(used[k] for k, s in enumerate(trace.slots)
                      if s.node in nodes and mode in s.mode)
            for kind, mode in (("load", "r"), ("store", "w"))}


def check_data_accesses(facts: KernelFacts, trace: Trace, sizes: dict[str, int]) -> list[str]:
    """Loads and stores to memory of every block that runs, for functions without calls
    (a callee's accesses are counted through its own facts); accesses to registers (a
    space no addressable memory holds) are not memory traffic (issue 11)."""
    if any(item.calls and any(facts.callee(c) for c, _ in item.calls)
           for item in facts.items):
        return []
    costs = function_costs(facts, sizes)  # the `if`s decided at these sizes applied
    # Scalars in addressable memory are data accesses too; the tracer logs elements only.
    if any(not a.element for a in memory_accesses(facts).values()):
        return []
    problems = []
    exact = not costs.approximations
    for kind, seen in traced_accesses(facts, trace).items():
        value = _number(costs.total(DATA, kind), sizes)
        if value is None:
            continue
        if (exact and value != seen) or value < seen:
            problems.append(f"{kind}s: symbolic {costs.total(DATA, kind)} = {value}, "
                            f"brute force {seen}")
    return problems


def check_reuse(facts: KernelFacts, trace: Trace, sizes: dict[str, int]) -> list[str]:
    """Reuse factors and ratios against the logged accesses, per instance of the
    array's declaration (loops outside it are held fixed)."""
    problems = []
    for finding in find_reuse(facts):
        acc = finding.access
        scope = {id(x.node) for x in reuse_loops(acc)}
        for site, entries in trace.sites(id(acc.node)):
            if "r" not in site.mode or not entries:
                continue
            if isinstance(finding, LoopReuse):
                problems += _check_loop_reuse(finding, site.loops, entries, sizes)
            elif isinstance(finding, RatioReuse) and finding.exact:
                problems += _check_ratio(finding, site.loops, scope, entries, sizes)
    return problems


def _positions(loops: tuple[int, ...], wanted: Any) -> list[int]:
    return [k for k, loop in enumerate(loops) if wanted(loop)]


def _check_loop_reuse(finding: LoopReuse, loops: tuple[int, ...], entries: list,
                      sizes: dict[str, int]) -> list[str]:
    independent = {id(x.node) for x in finding.independent}
    fixed = _positions(loops, lambda x: x not in independent)
    groups: dict[tuple, list[tuple[int, ...]]] = defaultdict(list)
    for index, values in entries:
        groups[tuple(values[k] for k in fixed)].append(index)
    where = f"{finding.access.node.span}"
    problems = []
    for key, indices in groups.items():
        if len(set(indices)) != 1:
            problems.append(f"{where}: claimed independent of {finding.independent}, but "
                            f"accesses {sorted(set(indices))[:4]} for {key}")
            break
    reuse = _number(finding.reuse, sizes)
    sizes_seen = {len(v) for v in groups.values()}
    if reuse is not None:
        if finding.exact and sizes_seen != {reuse}:
            problems.append(f"{where}: reuse {finding.reuse} = {reuse}, brute force {sizes_seen}")
        if not finding.exact and max(sizes_seen) > reuse:
            problems.append(f"{where}: reuse bound {reuse} < brute force {max(sizes_seen)}")
    return problems


def _check_ratio(finding: RatioReuse, loops: tuple[int, ...], scope: set[int], entries: list,
                 sizes: dict[str, int]) -> list[str]:
    outside = _positions(loops, lambda x: x not in scope)
    groups: dict[tuple, list] = defaultdict(list)
    for index, values in entries:
        groups[tuple(values[k] for k in outside)].append((index, values))
    d = finding.dimension
    dloops = {id(x.node) for x in finding.loops}
    inside = _positions(loops, lambda x: x in dloops)
    want_acc = _number(finding.accesses, sizes)
    want_distinct = _number(finding.distinct, sizes)
    where = f"{finding.access.node.span} dimension {d}"
    for key, group in groups.items():
        if d is None:
            accesses = len(group)
            distinct = len({index for index, _ in group})
        else:
            accesses = len({tuple(values[k] for k in inside) for _, values in group})
            distinct = len({index[d] for index, _ in group})
        if (accesses, distinct) != (want_acc, want_distinct):
            return [f"{where}: symbolic {finding.accesses} = {want_acc} accesses, "
                    f"{finding.distinct} = {want_distinct} distinct; brute force "
                    f"{accesses}, {distinct} (group {key})"]
    return []


def read_versions(trace: Trace) -> list[Any]:
    """Per log entry, the write whose value it reads (paper 6.3, "where v was last
    defined"): replaying the trace in the order it ran, each store starts a new version
    of its element; an element never stored has its initial version. Entries that only
    write get None."""
    current: dict[tuple[int, tuple[int, ...]], Any] = {}
    out: list[Any] = []
    for n, ((slot, index, _), (array, _value)) in enumerate(
            zip(trace.log, trace.memory, strict=True)):
        key = (id(array), index)
        mode = trace.slots[slot].mode
        out.append(current.setdefault(key, ("initial", key)) if "r" in mode else None)
        if "w" in mode:
            current[key] = ("write", n)
    return out


def check_reads_per_version(facts: KernelFacts, trace: Trace, sizes: dict[str, int]
                            ) -> list[str]:
    """Per written value, how many reads see it: for a `reuse-independent` finding, the
    reads of one version of an element with the loops the subscript depends on fixed
    (the other loops' iterations are the reuse) must number `reuse` (at most, when
    approximate). A value redefined inside a loop is not reused across that loop, and
    loading it once outside that loop would change the result."""
    versions = read_versions(trace)
    by_slot: dict[int, list[int]] = defaultdict(list)
    for n, (slot, _, _) in enumerate(trace.log):
        by_slot[slot].append(n)
    problems = []
    for finding in find_reuse(facts):
        if not isinstance(finding, LoopReuse):
            continue
        writes = {id(loop) for w in finding.access.binding.root.writes for loop in w.item.loops}
        if any(x.kind == "foreach" and id(x) in writes for x in finding.independent):
            continue  # units that write what they read (atomics): no claim about versions
        reuse = _number(finding.reuse, sizes)
        independent = {id(x.node) for x in finding.independent}
        for k, site in enumerate(trace.slots):
            if site.node != id(finding.access.node) or "r" not in site.mode:
                continue
            fixed = _positions(site.loops, lambda x, ind=independent: x not in ind)
            reads: dict[tuple, int] = defaultdict(int)
            seen_by: dict[tuple, set] = defaultdict(set)  # fixed loops -> versions read
            for n in by_slot[k]:
                key = tuple(trace.log[n][2][j] for j in fixed)
                reads[(versions[n], *key)] += 1
                seen_by[key].add(versions[n])
            where = f"{finding.access.node.span}"
            mixed = [key for key, vs in seen_by.items() if len(vs) > 1]
            if mixed:  # loading it once outside those loops would change the result
                problems.append(f"{where}: reused across {finding.independent}, but the "
                                f"iterations read {len(seen_by[mixed[0]])} different "
                                f"values (redefined in between) at {mixed[0]}")
            seen = set(reads.values())
            if not seen or reuse is None:
                continue
            if finding.exact and seen != {reuse}:
                problems.append(f"{where}: reuse {finding.reuse} = {reuse}, but one value "
                                f"is read {sorted(seen)} times")
            elif max(seen) > reuse:
                problems.append(f"{where}: reuse bound {reuse} < {max(seen)} reads of one "
                                "value")
    return problems


def check_transfers(facts: KernelFacts, trace: Trace, args: dict[str, Any],
                    sizes: dict[str, int]) -> list[str]:
    """Bytes of every array parameter moved, in the direction the trace uses it."""
    problems = []
    static = {name: (mode, size) for name, mode, size in
              parameter_bytes(facts)}
    possible_reads = {s.param for s in trace.slots if s.param is not None and "r" in s.mode}
    for p in facts.params:
        if not p.is_array:
            continue
        array = args[p.name]
        read, written = p.name in trace.read_params, p.name in trace.written_params
        if not (read or written):
            continue
        if p.name not in static:
            problems.append(f"{p.name}: used by the kernel but not transferred")
            continue
        mode, size = static[p.name]
        # A read site these inputs never ran (spmv hopper_v2's atomicAdd on a row that
        # crosses tiles, with one non-zero) is still a read the transfer must allow for.
        unexercised = "r" in mode and not read and p.name in possible_reads
        if (("r" in mode) != read and not unexercised) or ("w" in mode) != written:
            problems.append(f"{p.name}: mode {mode!r}, brute force read={read} "
                            f"written={written}")
        if _number(size, sizes) != array.nbytes:
            problems.append(f"{p.name}: {size} = {_number(size, sizes)} bytes, array "
                            f"has {array.nbytes}")
    return problems
