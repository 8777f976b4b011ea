"""Advice that pays (docs/feedback.md, "Faster memory"): a warp-uniform load reused by a
thread's own loop gets a register hint, not a shared one (`memory-register`), and reuse
between the threads of a block that the l1 already serves is a fact, not a proposal for
shared memory (`memory-cache-serves`). The figures are held against a brute-force trace
of the kernels (brute.py) on small sizes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from brute import Trace, Tracer
from conftest import KERNELS, by_code, feedback, load_kernel
from warp_trace import LINE, count_lines, numeric_values, warp_addresses

from mcl import pipeline
from mcl.feedback.analyses.timemodel import MIN_GAIN
from mcl.feedback.facts.kernel import build_facts
from mcl.feedback.messages import FeedbackSeverity, Message
from mcl.feedback.registry import analyse
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr

HERE = Path(__file__).parent / "kernels"
FIR, FIR_HOPPER = HERE / "fir.mcpl", HERE / "fir_hopper.mcpl"
UNIFORM, UNIFORM_INNER = HERE / "uniform_weight_hopper.mcpl", \
    HERE / "uniform_weight_inner_hopper.mcpl"


def _run(path: Path, sizes: dict[str, int]) -> tuple[list[Message], Any, Trace]:
    """The feedback on the kernel at its own level, its facts and a brute-force trace."""
    program, library = load_kernel(path)
    function = program.main.functions[-1]
    hwd = library.get(function.hwd)
    rng = np.random.default_rng(1)
    args: dict[str, Any] = dict(sizes)
    for p in function.params:
        if isinstance(p.type, ast.ArrayType):
            shape = tuple(int(eval(print_expr(d), {}, dict(sizes)))  # noqa: S307
                          for g in p.type.dims for d in g)
            args[p.name] = rng.random(shape)
    trace = Tracer(program, hwd).run(function, args)
    checked = pipeline.checked(program, library)
    return (analyse(function, checked, hwd, sizes), build_facts(function, checked, hwd),
            trace)


def _about(messages: list[Message], code: str, text: str) -> list[Message]:
    return [m for m in by_code(messages, code) if m.text.startswith(text)]


# ----------------------------------------------------------------------------- l1 serves


@pytest.mark.parametrize("taps", [8, 70])
def test_fir_overlap_is_served_by_the_l1_with_the_lines_a_block_touches(taps: int) -> None:
    """FIR at hopper: the block's 256 threads read x[i + k] and w[k]; the bound on the
    lines they touch is at least what the trace touches and at most a line more."""
    sizes = {"n": 1024, "taps": taps}
    messages, facts, trace = _run(FIR_HOPPER, sizes)
    assert not by_code(messages, "memory-faster-space")
    for text in ("x[i + k]", "w[k]"):
        (served,) = _about(messages, "memory-cache-serves", text)
        assert served.severity == FeedbackSeverity.INFO
        assert "l1 already serves the reuse between the 256 threads of a block" in served.text
        figures = numeric_values(served)
        block = [a for warp in warp_addresses(trace, facts, text, "r").values() for a in warp]
        touched = count_lines(block, LINE) * LINE
        assert touched <= figures["footprint_bytes"] <= touched + LINE, text
        assert figures["footprint_bytes"] <= figures["cache_bytes"] == 28 * 1024
        assert figures["units"] == 256


def test_fir_at_the_paper_size_and_translated_from_perfect() -> None:
    """The perfect FIR translated to hopper and to fermi: the l1 serves both inputs; at
    perfect there is no faster memory to propose."""
    sizes = {"n": 1 << 20, "taps": 64}
    for level in ("hopper", "fermi"):
        messages = feedback(FIR, level, values=sizes)
        assert not by_code(messages, "memory-faster-space"), level
        assert {m.text.split(":")[0].split(" ")[0]
                for m in by_code(messages, "memory-cache-serves")} == {"w[k]", "x[i"}
    assert not [m for m in feedback(FIR, values=sizes) if m.code.startswith("memory-")
                and m.code != "memory-access-optimal"]


def test_a_block_whose_lines_outgrow_the_l1_keeps_the_proposal() -> None:
    """8,192 taps: 256 + 8,191 floats of x and 8,192 of w per block, over 28 kB."""
    messages = feedback(FIR_HOPPER, values={"n": 1 << 20, "taps": 8192})
    assert not by_code(messages, "memory-cache-serves")
    assert _about(messages, "memory-faster-space", "x[i + k]")
    assert _about(messages, "memory-faster-space", "w[k]")


def test_without_the_sizes_the_proposal_stays() -> None:
    """Whether the lines fit depends on taps: no claim without it."""
    messages = feedback(FIR_HOPPER)
    assert not by_code(messages, "memory-cache-serves")
    assert _about(messages, "memory-faster-space", "x[i + k]")


def test_the_matmul_tiles_the_series_rely_on_are_still_proposed() -> None:
    """A block's row of a over the whole loop over k (4 B x p) outgrows the l1 at large
    p: the paper's tile stays a suggestion; gpu has no cache, nothing changes there."""
    matmul = KERNELS / "matmul" / "perfect.mcpl"
    for level in ("hopper", "fermi"):
        big = feedback(matmul, level, values={"n": 2048, "m": 2048, "p": 8192})
        assert _about(big, "memory-faster-space", "a[i, k]"), level
        small = feedback(matmul, level, values={"n": 2048, "m": 2048, "p": 1024})
        assert _about(small, "memory-cache-serves", "a[i, k]"), level
    assert _about(feedback(matmul, "gpu", values={"n": 2048, "m": 2048, "p": 2048}),
                  "memory-faster-space", "a[i, k]")


# ----------------------------------------------------------------------------- registers


def test_a_warp_uniform_weight_reloaded_in_a_loop_gets_a_register_hint() -> None:
    sizes = {"n": 512, "rows": 3, "cols": 5}
    messages, facts, trace = _run(UNIFORM, sizes)
    assert not _about(messages, "memory-faster-space", "weight[r]")
    assert not _about(messages, "memory-cache-serves", "weight[r]")
    (register,) = _about(messages, "memory-register", "weight[r]")
    # a suggestion when the time model's gain is at least MIN_GAIN, else a fact (at these
    # sizes a fact: tests/feedback/test_timemodel.py weighs the hint)
    gain = numeric_values(register)["estimated_gain"]
    assert (register.severity == FeedbackSeverity.SUGGESTION) == (gain >= MIN_GAIN)
    assert "32 threads that run in lock-step" in register.text
    assert register.hint is not None and "once outside for-loop k" in register.hint
    # every warp reads one element per iteration (one transaction, a broadcast) ...
    per_iteration = warp_addresses(trace, facts, "weight[r]", "r", by_iteration=True)
    assert per_iteration and all(len(set(a)) == 1 for a in per_iteration.values())
    # ... and each thread loads it `iterations` times per iteration of r
    loops = {id(x.node): x.name for x in facts.loops}
    node = next(id(a.node) for a in facts.accesses if print_expr(a.node) == "weight[r]")
    ((site, entries),) = trace.sites(node)
    names = [loops[k] for k in site.loops]
    first = [v for _, v in entries if all(v[names.index(x)] == 0 for x in ("b", "wi", "t", "r"))]
    assert numeric_values(register)["iterations"] == len(first) == sizes["cols"]


def test_the_register_hint_keeps_the_result(tmp_path: Path) -> None:
    """Applying the hint (a local variable loaded outside loop k) computes the same y."""
    sizes = {"n": 300, "rows": 3, "cols": 5}
    source = UNIFORM.read_text()
    hoisted = source.replace(
        "for (int k = 0; k < cols; k++) {\n              sum += weight[r] * x[r, k, i];",
        "float wr = weight[r];\n            for (int k = 0; k < cols; k++) {\n"
        "              sum += wr * x[r, k, i];")
    assert hoisted != source
    results = []
    for n, text in enumerate((source, hoisted)):
        path = tmp_path / f"k{n}.mcpl"
        path.write_text(text)
        _, _, trace = _run(path, sizes)
        stores = [value for (_, value), (slot, _, _) in zip(trace.memory, trace.log,
                                                            strict=True)
                  if trace.slots[slot].param == "y" and "w" in trace.slots[slot].mode]
        results.append(stores)
    assert len(results[0]) == sizes["n"] and results[0] == results[1]


def test_no_register_hint_when_the_element_changes_inside_the_reusing_loop() -> None:
    """for k { for r { weight[r] } }: no loop inside the reuse leaves the element as is."""
    messages = feedback(UNIFORM_INNER, values={"n": 1 << 20, "rows": 16, "cols": 64})
    assert not by_code(messages, "memory-register")
    assert _about(messages, "memory-cache-serves", "weight[r]")


def test_a_weight_per_thread_is_no_register_hint() -> None:
    """The FIR's x[i + k] depends on the lanes: not warp-uniform, no register hint; w[k]
    is warp-uniform but depends on the only loop around it."""
    messages = feedback(FIR_HOPPER, values={"n": 1 << 20, "taps": 64})
    assert not by_code(messages, "memory-register")
