"""Reliability, round 5: growth with the shape of the input (deep `for` nests, many small
functions) and the wrong acceptances that remained (docs/reliability.md)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import mcl.feedback.program_view as program_view
from mcl.cli import main
from mcl.deep_stack import run_with_deep_stack
from mcl.mcpl import ast, uninitialised
from mcl.mcpl.first_iteration import first_iteration_divisions
from mcl.mcpl.parse import parse_file
from tests.fuzz.checking import check_text as _check
from tests.fuzz.checking import write_source as _write

KERNEL = ("perfect void k{f}(int n, main float[n] a) {{\n"
          "  foreach (int i in n threads) {{\n    {body}\n  }}\n}}\n")


def for_nest(depth: int) -> str:
    body = "a[i] = a[i] + 1.0;"
    for k in reversed(range(depth)):
        body = f"for (int k{k} = 0; k{k} < 2; k{k}++) {{ {body} }}"
    return KERNEL.format(f="", body=body)


def test_feedback_on_300_nested_loops_is_complete_and_quick(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Was cubic in the depth: 25 s of CPU time and "analysis out of time" at 300. Now
    # about 0.5 s for the operation statistics: the budget is set to 4 s, since CPU time
    # itself grows on a machine loaded past its cores (a CI run at load 10 on 2 cores
    # went past the default 1 s), and the cubic walk would still run out of it.
    monkeypatch.setenv("MCL_FEEDBACK_BUDGET", "4")
    path = _write(tmp_path, for_nest(300))
    start = time.process_time()
    assert main(["check", "--feedback", "-v", str(path)]) == 0
    seconds = time.process_time() - start
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "feedback-budget" not in out and "out of time" not in out
    assert "opstats-summary" in out
    assert seconds < 10, f"{seconds:.1f} s of CPU time"


def test_the_checks_of_loops_walk_a_deep_nest_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each loop walked its whole body for what it sets: quadratic in the depth.
    depth = 200
    path = _write(tmp_path, for_nest(depth))
    function = run_with_deep_stack(lambda: parse_file(path)).functions[0]
    nodes = sum(1 for _ in ast.walk(function.body))
    calls = 0
    children = ast.children

    def counted(node: object) -> Any:
        nonlocal calls
        calls += 1
        return children(node)

    monkeypatch.setattr(ast, "children", counted)
    assert run_with_deep_stack(lambda: uninitialised.uninitialised_diagnostics(function)) == []
    assert calls < 8 * nodes, f"{calls} children() calls for {nodes} nodes"
    calls = 0  # the walk for divisions in first iterations, likewise
    assert run_with_deep_stack(lambda: first_iteration_divisions(function)) == []
    assert calls < 8 * nodes, f"{calls} children() calls for {nodes} nodes"


def test_the_program_access_modes_are_inferred_once_for_many_functions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # Inferred again for each function's analyses: 250 small functions took 9 s.
    source = "".join(KERNEL.format(f=f, body="a[i] = a[i] + 1.0;") for f in range(30))
    path = _write(tmp_path, source)
    calls = 0
    infer = program_view.infer_access

    def counted(program: Any) -> dict[str, dict[str, str]]:
        nonlocal calls
        calls += 1
        return infer(program)

    monkeypatch.setattr(program_view, "infer_access", counted)
    assert main(["check", "--feedback", str(path)]) == 0
    capsys.readouterr()
    assert calls == 1


RACE = ("perfect void k(int n, main float[n] a, float r) {{\n"
        "  foreach (int i in n threads) {{\n    {write}\n  }}\n}}\n")


@pytest.mark.parametrize(("write", "said"), [
    ("a[i * 0] = 1.0;", "the same element"),
    ("a[i % 1] = 1.0;", "the same element"),
    ("a[min(i, 0)] = 1.0;", "the same element"),
    ("a[i / (n + 1)] = 1.0;", "'i / (n + 1)' is one value for consecutive 'i'"),
    ("a[i / 2] = 1.0;", "'i / 2' is one value for consecutive 'i'"),
    ("a[i >> 1] = 1.0;", "'i >> 1' is one value for consecutive 'i'"),
    ("r = a[i];", "writes the scalar result 'r'"),
])
def test_several_units_writing_one_element_is_a_race(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], write: str, said: str) -> None:
    out = _check(tmp_path, RACE.format(write=write), capsys)
    assert "[mcpl-write-race]" in out and said in out
    assert out.count("[mcpl-write-race]") == 1


@pytest.mark.parametrize("write", [
    "a[i] = 1.0;", "a[i * 2 / 2] = 1.0;", "a[(i / 2) * 2 + i % 2] = 1.0;", "a[i / 1] = 1.0;",
    "a[min(i, n)] = 1.0;", "if (i == 0) { r = a[i]; }", "a[i / n] = 1.0;",
])
def test_units_writing_their_own_element_are_no_race(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], write: str) -> None:
    # `i / n` is 0 for every unit, but n may be 1 (one unit): beyond this syntactic rule
    out = _check(tmp_path, RACE.format(write=write), capsys)
    assert "mcpl-write-race" not in out, out


def test_a_local_tile_written_at_half_the_thread_index_is_a_race(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = ("gpu void k(int n, float[n * 32] a) {\n  foreach (int b in n blocks) {\n"
              "    local float[32] s;\n    foreach (int t in 32 threads) {\n"
              "      s[t / 2] = a[b * 32 + t];\n      barrier(local);\n"
              "      a[b * 32 + t] = s[t];\n    }\n  }\n}\n")
    out = _check(tmp_path, source, capsys)
    assert "several units of foreach 't' (32 threads) write 's[t / 2]'" in out


DIVISION = ("perfect void k(int n, main float[n] a, main float[n] b) {{\n"
            "  foreach (int i in n threads) {{\n    float s = 0.0;\n"
            "    for (int k = 0; {cond}; k++) {{\n      {body}\n    }}\n    a[i] = s;\n  }}\n}}\n")


@pytest.mark.parametrize(("cond", "body"), [
    ("k < n", "s += b[i] / k;"),
    ("k < 4", "int q = i % k; s += toFloat(q);"),
    ("k <= 0", "s += b[i] / toFloat(k) + b[i] / k;"),
])
def test_a_division_by_a_counter_that_starts_at_0_is_reported(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], cond: str, body: str) -> None:
    out = _check(tmp_path, DIVISION.format(cond=cond, body=body), capsys)
    assert "'k' is 0 in the first iteration of its loop [mcpl-division-by-zero]" in out, out


@pytest.mark.parametrize(("cond", "body"), [
    ("k < n", "if (k > 0) { s += b[i] / k; }"),
    ("k < n", "s += b[i] / (k + 1);"),
    ("k < n", "k += 1; s += b[i] / k;"),
    ("k > 0", "s += b[i] / k;"),  # never runs
    ("k < n", "if (i > 3 && b[i] / k > 1.0) { s += 1.0; }"),
])
def test_a_division_the_first_iteration_may_not_make_is_left_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], cond: str, body: str) -> None:
    out = _check(tmp_path, DIVISION.format(cond=cond, body=body), capsys)
    assert "mcpl-division-by-zero" not in out, out
