"""Every load counted wherever its value goes, the roofline at its highest roof, and a
lower bound built from lower counts only, each against a brute-force trace (brute.py) at
two sizes.

- A load whose value becomes an index through a local (`int bin = toInt(v[i] * 64.0);
  atomicAdd(lh[bin], 1);`) belongs to an indexing block (paper 6.2); it moves its bytes
  all the same: the data accesses, the roofline's device-memory traffic and the time
  model's count it.
- The roofline's least time is the largest of the times its roofs imply: the histogram
  that must read all of v from device memory is bound by that, never by the lower
  shared-memory roof.
- An `if` decided by data (a per-block flag) makes the counts bounds: the upper counts
  take its branch everywhere, the lower ones (`function_costs(least=True)`) its skip.
  The roofline's "at least" comes from the lower ones and never exceeds what a trace
  of a run that skips it moves; the time estimate says it cannot decide the branch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from brute import Trace, Tracer
from conftest import by_code, load_kernel
from oracle import _number, check_data_accesses, check_executions, traced_accesses

from mcl import pipeline
from mcl.feedback.analyses.roofline import roofline_of
from mcl.feedback.facts.costs import COMPUTATIONAL, DATA, function_costs
from mcl.feedback.facts.kernel import STMT, KernelFacts, build_facts
from mcl.feedback.registry import analyse
from mcl.hdl.peak import bandwidth

HERE = Path(__file__).parent / "kernels"
HISTOGRAM = HERE / "histogram_through_local.mcpl"
FLAGGED = HERE / "flagged_blocks.mcpl"


def _facts(path: Path) -> tuple[Any, KernelFacts]:
    program, library = load_kernel(path)
    function = program.main.functions[-1]
    return program, build_facts(function, pipeline.check(program, library),
                                library.get(function.hwd))


def _histogram_trace(n: int, nb: int) -> tuple[KernelFacts, Trace]:
    program, facts = _facts(HISTOGRAM)
    rng = np.random.default_rng(n)
    args = {"n": n, "nb": nb, "out": np.zeros(64, np.int32),
            "v": rng.random(n, dtype=np.float32)}
    return facts, Tracer(program, facts.hwd).run(facts.function, args)


def _v_loads(facts: KernelFacts, trace: Trace) -> int:
    """The loads of v the trace logged."""
    nodes = {id(a.node) for a in facts.accesses if a.binding.root.name == "v"}
    used = trace.per_slot()
    return sum(used[k] for k, s in enumerate(trace.slots) if s.node in nodes)


@pytest.mark.parametrize(("n", "nb"), [(3000, 2), (5000, 3)])
def test_loads_feeding_an_index_through_a_local_are_counted(n: int, nb: int) -> None:
    facts, trace = _histogram_trace(n, nb)
    sizes = {"n": n, "nb": nb}
    assert not check_executions(facts, trace, sizes)
    assert not check_data_accesses(facts, trace, sizes)
    costs = function_costs(facts, sizes)
    assert not costs.approximations  # exact: equal to the trace
    seen = traced_accesses(facts, trace)
    assert _number(costs.total(DATA, "load"), sizes) == seen["load"]
    # every element of v is read once, and counted as a global load
    assert _v_loads(facts, trace) == n
    v_loads = sum(count for (cat, kind, _, key), count in costs.entries.items()
                  if (cat, kind, key) == (DATA, "load", ("param", "v")))
    assert _number(v_loads, sizes) == n


@pytest.mark.parametrize(("n", "nb"), [(3000, 2), (5000, 3)])
def test_the_roofline_takes_its_highest_roof(n: int, nb: int) -> None:
    facts, trace = _histogram_trace(n, nb)
    program, library = load_kernel(HISTOGRAM)
    function = program.main.functions[-1]
    hwd = library.get(function.hwd)
    sizes = {"n": n, "nb": nb}
    roof = roofline_of(function, pipeline.check(program, library), hwd, values=sizes)
    assert roof is not None
    # the bytes of v that must come from device memory, from the trace: each element
    # read once (4 B a float), and out read and written
    read_bytes = 4 * len({index for slot, index, _ in trace.log
                          if trace.slots[slot].param == "v"})
    global_bytes = _number(next(lv.bytes for lv in roof.levels if lv.space == "global"),
                           sizes)
    assert global_bytes >= read_bytes == 4 * n
    least = roof.min_seconds(sizes)
    times = roof.times(sizes)
    assert least is not None and times is not None
    assert least == max(times.values())
    rate = bandwidth(hwd, "global")
    assert rate is not None
    assert least >= read_bytes / rate.bytes_per_s
    assert roof.bound(sizes) == "global"  # not the shared roof below it


def test_the_histogram_feedback_is_bound_by_device_memory() -> None:
    program, library = load_kernel(HISTOGRAM)
    function = program.main.functions[-1]
    n = 1 << 26
    messages = analyse(function, pipeline.check(program, library), library.get("hopper"),
                       {"n": n, "nb": 1056})
    (roof,) = by_code(messages, "roofline")
    assert "bound by global memory bandwidth" in roof.text
    assert roof.value_map["bytes_global"].numeric >= 4 * n
    (estimate,) = by_code(messages, "time-estimate")
    # the device-memory term reads v's 268 MB at the achieved share of 3.35 TB/s
    assert estimate.value_map["seconds_device_memory"].numeric >= 4 * n / 3.35e12


def _flagged_trace(nb: int, flags: np.ndarray) -> tuple[KernelFacts, Trace]:
    program, facts = _facts(FLAGGED)
    n = nb * 256
    args = {"n": n, "nb": nb, "y": np.zeros(n, np.float32),
            "x": np.ones(n, np.float32), "flag": flags.astype(np.int32)}
    return facts, Tracer(program, facts.hwd).run(facts.function, args)


def _traced_flops(facts: KernelFacts, trace: Trace) -> int:
    """The multiply-adds the trace ran: two operations per run of the loop's body."""
    from oracle import _TRACE_KIND

    body = [item for item in facts.items if item.kind == STMT and item.span is not None
            and item.span.line == 15]  # v = v * 0.999 + 0.5;
    assert len(body) == 1
    return sum(2 * trace.counts[(id(item.node), _TRACE_KIND[item.kind])] for item in body)


@pytest.mark.parametrize("nb", [3, 8])
def test_a_branch_decided_by_data_is_bounded_on_both_sides(nb: int) -> None:
    sizes = {"n": nb * 256, "nb": nb}
    for flags in (np.zeros(nb), np.ones(nb), np.arange(nb) % 3 == 0):
        facts, trace = _flagged_trace(nb, np.asarray(flags))
        upper = function_costs(facts, sizes)
        least = function_costs(facts, sizes, least=True)
        assert [g.span.line for g in upper.undecided()] == [13]
        seen = traced_accesses(facts, trace)
        flops = _traced_flops(facts, trace)
        for kind in ("load", "store"):
            low = _number(least.total(DATA, kind), sizes)
            high = _number(upper.total(DATA, kind), sizes)
            assert low <= seen[kind] <= high, kind
        low = _number(least.total(COMPUTATIONAL), sizes)
        high = _number(upper.total(COMPUTATIONAL), sizes)
        assert low <= flops <= high
    # the lower bound is the skip, the upper one the heavy branch in every block
    assert _number(least.total(COMPUTATIONAL), sizes) == 0
    assert _number(upper.total(COMPUTATIONAL), sizes) == 2 * 256 * 256 * nb


def test_at_least_is_built_from_the_lower_counts() -> None:
    program, library = load_kernel(FLAGGED)
    function = program.main.functions[-1]
    hwd = library.get("hopper")
    nb = 65536
    sizes = {"n": nb * 256, "nb": nb}
    roof = roofline_of(function, pipeline.check(program, library), hwd, values=sizes)
    assert roof is not None and roof.least is not None and roof.undecided == (13,)
    least, most = roof.min_seconds(sizes), roof.most_seconds(sizes)
    assert least is not None and most is not None
    # if every block skips the loop the kernel moves x, y and the flags: the least time
    # is that traffic's, not the 256-step loop's arithmetic in every block
    skipped = (8 * sizes["n"] + 4 * nb) / 3.35e12
    assert least == pytest.approx(skipped, rel=1e-3)
    assert roof.bound(sizes) == "global"
    assert most > 2 * least  # the heavy branch everywhere: compute
    messages = analyse(function, pipeline.check(program, library), hwd, sizes)
    (text,) = [m.text for m in by_code(messages, "roofline")]
    assert "with the smaller branch of the if at line 13 in every unit" in text
    assert "bound by the arithmetic peak (compute), with the larger" in text
    (estimate,) = by_code(messages, "time-estimate")
    assert "cannot decide the if at line 13" in estimate.text
    assert estimate.value_map["estimated_seconds_least"].numeric < \
        estimate.value_map["estimated_seconds"].numeric
