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
from mcl.mcpl.parse import parse_file

KERNEL = ("perfect void k{f}(int n, main float[n] a) {{\n"
          "  foreach (int i in n threads) {{\n    {body}\n  }}\n}}\n")


def for_nest(depth: int) -> str:
    body = "a[i] = a[i] + 1.0;"
    for k in reversed(range(depth)):
        body = f"for (int k{k} = 0; k{k} < 2; k{k}++) {{ {body} }}"
    return KERNEL.format(f="", body=body)


def _write(tmp_path: Path, source: str, name: str = "k.mcpl") -> Path:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    return path


def test_feedback_on_300_nested_loops_is_complete_and_quick(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Was cubic in the depth: 25 s of CPU time and "analysis out of time" at 300.
    path = _write(tmp_path, for_nest(300))
    start = time.process_time()
    assert main(["check", "--feedback", "-v", str(path)]) == 0
    seconds = time.process_time() - start
    out = capsys.readouterr().out
    assert "feedback-budget" not in out and "out of time" not in out
    assert "opstats-summary" in out
    assert seconds < 10, f"{seconds:.1f} s of CPU time"


def test_the_initialisation_check_walks_a_deep_nest_once(
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
