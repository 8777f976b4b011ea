"""Bounded analysis (issue 11, item 4): the corpus of GPU loop idioms in
tests/feedback/kernels/idioms/ gets exact counts (brute force on small random sizes),
finishes within the budget at large sizes, and a spent budget gives a marked
approximation instead of running on."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import oracle
import pytest
import sympy
from brute import Tracer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcl import pipeline
from mcl.feedback.budget import budget, spent
from mcl.feedback.facts.kernel import build_facts
from mcl.feedback.facts.sums import sum_number
from mcl.feedback.registry import analyse, analyse_program
from mcl.hdl.library import default_library
from mcl.mcpl import ast
from mcl.mcpl.loader import load_program

IDIOMS = Path(__file__).parent / "kernels" / "idioms"
# Small sizes per parameter for the brute-force comparison: the grid-stride kernels run
# 16384 units, so n must exceed that to give some units several iterations.
SMALL = {"n": st.integers(1, 300), "p": st.integers(1, 40), "nb": st.integers(1, 5),
         "s": st.integers(1, 9)}
LARGE_N = {"n": st.integers(1, 40_000)}
EXACT = {"grid_stride": LARGE_N, "grid_stride_symbolic": LARGE_N, "min_bound": {},
         "triangular": {}, "tiled": {}, "strided": {}, "padded": {}}


def _load(name: str) -> tuple[object, ast.Function, object]:
    library = default_library()
    program = load_program(IDIOMS / f"{name}.mcpl", library=library)
    function = program.main.functions[0]
    return program, function, library.get(function.hwd)


def _args(function: ast.Function, sizes: dict[str, int]) -> dict[str, object]:
    """Zero arrays of the declared shapes, the sizes for the scalars."""
    def size(e: ast.Expr) -> int:
        if isinstance(e, ast.IntLit):
            return e.value
        if isinstance(e, ast.Name):
            return sizes[e.name]
        assert isinstance(e, ast.Binary) and e.op in ("+", "-", "*"), e
        a, b = size(e.left), size(e.right)
        return a + b if e.op == "+" else a - b if e.op == "-" else a * b

    args: dict[str, object] = {}
    for param in function.params:
        if isinstance(param.type, ast.ArrayType):
            shape = [size(d) for group in param.type.dims for d in group]
            args[param.name] = np.zeros(shape, dtype=np.float32)
        else:
            args[param.name] = sizes.get(param.name, 1.5)
    return args


@pytest.mark.parametrize("name", EXACT)
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_idiom_counts_match_brute_force(name: str, data: st.DataObject) -> None:
    program, function, hwd = _load(name)
    strategies = {**SMALL, **EXACT[name]}
    sizes = {p.name: data.draw(strategies[p.name], label=p.name) for p in function.params
             if p.name in strategies}
    facts = build_facts(function, pipeline.check(program, default_library()), hwd)
    trace = Tracer(program, hwd).run(function, _args(function, sizes))
    problems = oracle.check_executions(facts, trace, sizes)
    assert not problems, "\n".join(problems)


def test_grid_stride_is_a_closed_form() -> None:
    """The grid-stride nest runs n times in all, whatever the step (no Sum left)."""
    for name in ("grid_stride", "grid_stride_symbolic"):
        program, function, hwd = _load(name)
        checked = pipeline.check(program, default_library())
        messages = analyse(function, checked, hwd, {}, only=["opstats"])
        summary = next(m for m in messages if m.code == "opstats-summary")
        values = summary.value_map
        assert not values["computational"].symbolic.has(sympy.Sum)
        assert str(values["loads"].symbolic) in ("n", "2*n")
        overhead = next(m for m in messages if m.code == "opstats-overhead")
        assert not overhead.value_map["control_flow"].symbolic.has(sympy.Sum)


@pytest.mark.parametrize("path", sorted(IDIOMS.glob("*.mcpl")), ids=lambda p: p.stem)
def test_idioms_finish_within_the_budget_at_large_sizes(path: Path) -> None:
    """Issue 20's `min(4, p - l*l)` with p = 100000 hung in SymPy's term-by-term sum;
    every idiom now finishes (CPU time, as the budget counts it) well within seconds."""
    library = default_library()
    program = load_program(path, library=library)
    values = {"n": 100_000, "p": 100_000, "nb": 64, "s": 7, "nnz": 1_000_000,
              "iters_k": 10}
    start = time.thread_time()
    messages, _ = analyse_program(pipeline.check(program, library), library, values)
    assert time.thread_time() - start < 5.0
    assert messages
    summary = next(m for m in messages if m.code == "opstats-summary")
    assert summary.value_map["computational"].numeric is not None


def test_min_bound_count_is_exact() -> None:
    """max(0, min(4, p - l*l)) iterations: never a negative count."""
    program, function, hwd = _load("min_bound")
    checked = pipeline.check(program, default_library())
    messages = analyse(function, checked, hwd, {"p": 100_000}, only=["opstats"])
    summary = next(m for m in messages if m.code == "opstats-summary")
    p = 100_000
    expected = p * sum(max(0, min(4, p - outer * outer)) for outer in range(p))
    assert summary.value_map["computational"].numeric == expected
    assert not summary.approximate


def test_a_padded_tile_count_is_exact_and_closed() -> None:
    """`(len + 7) / 8 * 8` truncates toward zero; counted as a floor it still closes
    (ceiling of the tile's length), and a negative padded length runs no iterations."""
    program, function, hwd = _load("padded")
    for p, s in ((100, 5), (37, 40), (1, -20), (16, 13)):
        checked = pipeline.check(program, default_library())
        messages = analyse(function, checked, hwd, {"p": p, "s": s}, only=["opstats"])
        summary = next(m for m in messages if m.code == "opstats-summary")
        tiles = (p + 15) // 16
        per_unit = (sum(8 * (-(-min(16, p - 16 * b) // 8)) for b in range(tiles))
                    + max(0, 8 * int((s - 20 + 7) / 8)))
        computational = summary.value_map["computational"]
        assert computational.numeric == p * per_unit, (p, s)
        assert not computational.symbolic.has(sympy.Sum)


def test_long_sums_are_estimated_and_marked() -> None:
    t, k = sympy.symbols("t k", integer=True)
    exact, estimated = sum_number(sympy.Sum(sympy.ceiling((k + t) / sympy.Integer(7)),
                                            (k, 0, t), (t, 0, 99)))
    assert not estimated
    assert exact == sum((kk + tt + 6) // 7 for tt in range(100) for kk in range(tt + 1))
    n = 10**6
    value, estimated = sum_number(sympy.Sum(sympy.Sum(1, (k, 0, t)), (t, 0, n - 1)))
    assert estimated
    assert abs(value - n * (n + 1) // 2) / (n * (n + 1) // 2) < 1e-3


def test_a_spent_budget_leaves_the_analysis_not_analysed(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """Past the budget an analysis would take its fallbacks: instead of figures marked
    approximate it states only that it was not analysed (a warning per analysis)."""
    monkeypatch.setenv("MCL_FEEDBACK_BUDGET", "0")
    with budget() as b:
        assert spent() and b.cut
    program, function, hwd = _load("strided")
    checked = pipeline.check(program, default_library())
    messages = analyse(function, checked, hwd, {"n": 1000, "s": 3})
    warnings = [m for m in messages if m.code == "feedback-budget"]
    assert warnings and all("not analysed" in m.text for m in warnings)
    cut = {m.analysis for m in warnings}
    assert not [m for m in messages if m.analysis in cut and m.code != "feedback-budget"]


def test_the_budget_counts_the_analysing_thread_only() -> None:
    """CPU time spent by other threads of the process (numpy's BLAS threads on a many-core
    machine) does not use up the analyses' budget: the same feedback everywhere."""
    import threading

    from mcl.feedback.budget import budget, spent

    def burn() -> None:
        end = time.thread_time() + 0.5
        while time.thread_time() < end:
            pass

    with budget(0.2):
        other = threading.Thread(target=burn)
        other.start()
        other.join()  # 0.5 s of CPU time in another thread, none in this one
        assert not spent()
    with budget(0.05):
        burn()  # this thread's own time does count
        assert spent()
