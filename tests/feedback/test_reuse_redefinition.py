"""Reuse respects where a value was last defined (issue 11, item 2; paper 6.3).

The brute-force side of the acceptance ("per written value, how many reads see it") runs
for every shipped kernel in test_brute_force.py (`oracle.check_reads_per_version`). Here:
the kernels that showed the defect, and the hints applied: every "load X once outside
for-loop L" that can be applied mechanically is, and the interpreter must give the same
results as before.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import KERNELS, by_code, feedback, load_kernel

from mcl import pipeline
from mcl.feedback.messages import Message
from mcl.hdl.library import default_library
from mcl.interp import run_function
from mcl.mcpl.loader import load_program

HERE = Path(__file__).parent / "kernels"
SIZES = {"n": 2048, "m": 2048, "p": 2048}


def _independent_of(msg: Message) -> set[str]:
    return {k.removeprefix("iterations_") for k in msg.value_map if k.startswith("iterations_")}


def _reuse_of(messages: list[Message], text: str) -> list[Message]:
    return [m for m in by_code(messages, "reuse-independent") if f" {text} is " in m.text]


def test_gpu_v2_l_a_is_shared_by_the_threads_but_redefined_for_each_row() -> None:
    """l_a[k] is copied again in every iteration of ei: each written value is read by the
    256 threads of the block, not 1,024 times, and no hint to load it outside ei."""
    (msg,) = _reuse_of(feedback(KERNELS / "matmul" / "gpu_v2.mcpl", values=SIZES), "l_a[k]")
    assert _independent_of(msg) == {"tj"}
    assert msg.value_map["reuse"].numeric == 256
    assert msg.hint is None


@pytest.mark.parametrize(("kernel", "temp", "loop"), [
    ("mic_v2", "aTemp[k]", "ei"), ("xeon_phi_v1", "bTemp[k]", "ej"),
    ("xeon_phi_v2", "bTemp[k]", "ej"), ("xeon_phi_v3", "bTemp[kk]", "kb")])
def test_temporaries_are_not_reused_across_the_loop_that_refills_them(
        kernel: str, temp: str, loop: str) -> None:
    for msg in _reuse_of(feedback(KERNELS / "matmul" / f"{kernel}.mcpl", values=SIZES), temp):
        assert loop not in _independent_of(msg)
        assert msg.hint is None or f"for-loop {loop}" not in msg.hint


def test_the_hoisting_hint_stays_under_the_if_that_guards_the_subscripts() -> None:
    messages = feedback(KERNELS / "matmul" / "xeon_phi_v1.mcpl", values=SIZES)
    (a,) = _reuse_of(messages, "a[i, k]")
    assert a.hint is not None and "outside for-loop ej" in a.hint and "line 38" in a.hint
    (temp,) = _reuse_of(messages, "bTemp[k]")
    assert temp.hint is not None and "`if`" not in temp.hint  # k < p is the loop's own bound


# ----------------------------------------------------------------------------- hints applied


HINT = re.compile(r"load (.+) once outside for-loop (\w+) and keep the value in a register")


def _hoist(source: str, msg: Message, loop_line: int) -> str | None:
    """The source with the read `msg` is about loaded once before the for-loop at
    `loop_line`; None when the subscripts use a name declared inside the loop (not a
    mechanical change)."""
    assert msg.span is not None
    lines = source.split("\n")
    row = lines[msg.span.line - 1]
    text = row[msg.span.column - 1:msg.span.end_column - 1]
    inside = "\n".join(lines[loop_line - 1:msg.span.line])
    declared = set(re.findall(r"\b(?:int|float)\s+(\w+)", inside))
    if declared & set(re.findall(r"\w+", text[text.index("["):])):
        return None
    lines[msg.span.line - 1] = (row[:msg.span.column - 1] + "hoisted"
                                + row[msg.span.end_column - 1:])
    indent = re.match(r"\s*", lines[loop_line - 1])
    assert indent is not None
    lines.insert(loop_line - 1, f"{indent.group()}float hoisted = {text};")
    return "\n".join(lines)


def _run(path: Path, sizes: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    program = load_program(path)
    function = program.main.functions[-1]
    rng = np.random.default_rng(seed)
    args: dict[str, object] = dict(sizes)
    for p in function.params:
        if p.name not in sizes:
            shape = tuple(sizes[d.name] for g in p.type.dims for d in g)
            args[p.name] = rng.random(shape, dtype=np.float32)
    result = run_function(pipeline.check(program, default_library()), function.name, args)
    return {k: v for k, v in result.items() if isinstance(v, np.ndarray)}


def test_every_hoisting_hint_leaves_the_results_unchanged(tmp_path: Path) -> None:
    path = HERE / "reuse_redefined.mcpl"
    source = path.read_text()
    sizes = {"n": 5, "m": 7}
    before = _run(path, sizes, 1)
    messages = feedback(path)
    hinted = [m for m in by_code(messages, "reuse-independent") if m.hint and HINT.match(m.hint)]
    assert {m.text.split(" is ")[0].removeprefix("data reuse: ") for m in hinted} == {
        "x[i]", "u[i]"}  # t[i] is redefined in every iteration of r
    program, _ = load_kernel(path)
    loops = {s.var: s.span.line for s in _for_loops(program.main.functions[-1].body)}
    for msg in hinted:
        match = HINT.match(msg.hint or "")
        assert match is not None
        changed = _hoist(source, msg, loops[match.group(2)])
        assert changed is not None
        target = tmp_path / f"hoisted_{msg.span.line}_{msg.span.column}.mcpl"
        target.write_text(changed)
        after = _run(target, sizes, 1)
        for name, value in before.items():
            np.testing.assert_array_equal(after[name], value, err_msg=f"{msg.text}: {name}")


def _for_loops(stmt: object) -> list:
    from mcl.mcpl import ast

    out: list = []
    if isinstance(stmt, ast.For):
        out.append(stmt)
    for child in getattr(stmt, "stmts", ()) or ():
        out += _for_loops(child)
    for name in ("body", "then", "orelse"):
        child = getattr(stmt, name, None)
        if child is not None:
            out += _for_loops(child)
    return out
