"""Cache advice reasons per lock-step group and never contradicts coalescing (issue 11,
item 1): at a level with a simd_group (a warp's 32 threads, a core's 16 vector lanes) the
lines a loop fetches are those of the group's accesses together. A hint to transpose an
array or swap loops is only given where fermi's coalescing analysis (the independent
`load_store_optimality` function) also finds the warp's access wasteful."""

from __future__ import annotations

import pytest
from cases import Case, cases, load

from mcl import pipeline
from mcl.feedback.messages import FeedbackSeverity, Message
from mcl.feedback.registry import analyse
from mcl.hdl.library import default_library

SIZES = {"n": 64, "m": 64, "p": 64, "h": 64, "w": 64, "fh": 3, "fw": 3, "nnz": 256,
         "nrows": 64, "ncols": 64, "nbins": 16}
FERMI = [c for c in cases() if c.level == "fermi" or (
    c.level is None and c.path.stem.startswith(("fermi", "nvidia")))]


def _messages(case: Case) -> list[Message]:
    program, function, hwd = load(case)
    if hwd.name == "nvidia":  # no caches: analyse the kernel at fermi, its child
        from mcl.translate import translate_program

        program = translate_program(program, "fermi", default_library()).program
        function = program.main.function(function.name)
        hwd = default_library().get("fermi")
    values = {k: v for k, v in SIZES.items() if any(p.name == k for p in function.params)}
    return analyse(function, pipeline.check(program, default_library()), hwd, values)


@pytest.mark.parametrize("case", FERMI, ids=[c.id for c in FERMI])
def test_a_loop_order_hint_only_where_the_warp_access_is_not_coalesced(case: Case) -> None:
    messages = _messages(case)
    wasteful = {(m.span.line, m.span.column) for m in messages
                if m.code == "uncoalesced" and m.span is not None}
    for m in messages:
        if m.analysis == "cache" and m.hint and ("transposed" in m.hint or "swap" in m.hint):
            assert m.span is not None and (m.span.line, m.span.column) in wasteful, m.text


def test_perfect_at_fermi_no_longer_says_store_b_transposed() -> None:
    (case,) = [c for c in FERMI if c.path.parent.name == "matmul" and c.path.stem == "perfect"]
    messages = _messages(case)
    assert "memory-access-optimal" in {m.code for m in messages}
    (b_k,) = [m for m in messages if m.text.startswith("b[k, j] in loop k ")]
    assert b_k.severity == FeedbackSeverity.INFO and b_k.hint is None
    assert b_k.value_map["lines_per_iteration"].numeric == 1  # one 128 B line per warp


@pytest.mark.parametrize("name", ["nvidia_v1", "fermi_v1"])
def test_cooperative_loads_draw_no_cache_suggestion(name: str) -> None:
    (case,) = [c for c in FERMI if c.path.parent.name == "matmul" and c.path.stem == name]
    assert not [m for m in _messages(case)
                if m.analysis == "cache" and m.severity != FeedbackSeverity.INFO]
