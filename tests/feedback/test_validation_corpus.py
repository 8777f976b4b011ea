"""The idiom corpus of the feedback validation (benchmarks/validation_corpus, cases
`idiom-NAME` of benchmarks/validate_feedback.py; docs/validation.md): every kernel checks
clean, draws feedback at hopper at its validation size without an internal error, and
computes what its reference.py says on PoCL at small and uneven sizes. For the block scan
and the halo stencil the feedback's figures are held against a brute-force trace
(brute.py): statement and access counts, and per access the lines of 32 B a warp touches
and its bank-conflict degree, per iteration of the loops around it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import oracle
import pytest
from brute import Tracer
from warp_trace import (
    conflict_degree,
    count_lines,
    find_message,
    least_lines,
    numeric_values,
    warp_addresses,
)

from benchmarks.unseen_counts import UNEVEN  # sizes that divide no tile or block
from benchmarks.validate_feedback import CORPUS, CORPUS_FOLDER, cases
from mcl import pipeline
from mcl.cli import main
from mcl.feedback.facts.kernel import build_facts
from mcl.feedback.messages import Message
from mcl.feedback.registry import analyse
from mcl.mcpl.check import check_program
from mcl.mcpl.loader import load_program
from mcl.mcpl.printer import print_expr
from mcl.verify import expected_outputs, load_reference, make_inputs

NAMES = sorted(p.parent.name for p in CORPUS_FOLDER.glob("*/hopper.mcpl"))
SECTOR = 32  # hopper moves global memory in sectors of 32 B


def path(name: str) -> Path:
    return CORPUS_FOLDER / name / "hopper.mcpl"


def program(name: str, library: Any) -> Any:
    return load_program(path(name), (), library)


def test_the_corpus_is_what_validate_feedback_collects() -> None:
    assert NAMES == sorted(CORPUS) == sorted(UNEVEN)
    names = [c.name for c in cases()]
    assert len(names) == len(set(names))
    assert all(c.path.is_file() for c in cases())
    corpus = {c.name: c for c in cases() if c.name.startswith("idiom-")}
    assert {n: c.sizes for n, c in corpus.items()} == {f"idiom-{n}": s for n, s in CORPUS.items()}
    # the unpadded and the padded transpose of the series are cases too
    assert {"transpose-gpu_v1", "transpose-hopper_v1"} <= set(names)


@pytest.mark.parametrize("name", NAMES)
def test_checks_clean_and_draws_feedback_at_its_validation_size(
        name: str, library: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert check_program(program(name, library), library) == []
    defines = [a for k, v in CORPUS[name].items() for a in ("-D", f"{k}={v}")]
    assert main(["check", str(path(name)), "--format", "json", *defines]) == 0
    assert "internal error" not in capsys.readouterr().err


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("uneven", [False, True], ids=["reference-sizes", "uneven"])
def test_runs_verified_on_pocl(name: str, uneven: bool, library: Any) -> None:
    from mcl.backends.opencl.runner import select_device
    from mcl.report.measure import measure_program

    reference = load_reference(CORPUS_FOLDER / name / "reference.py")
    sizes, args = make_inputs(reference, UNEVEN[name] if uneven else {}, seed=7)
    measured = measure_program(program(name, library), reference.function, "hopper", library,
                               args, select_device(None), repeat=1, reference=reference,
                               expected=expected_outputs(reference, args),
                               work=reference.work(sizes))
    assert measured.problem is None and measured.verified is True


# ----------------------------------------------------------------------------- brute force


def _traced(name: str, sizes: dict[str, int], library: Any
            ) -> tuple[Any, Any, list[Message], Any]:
    prog = program(name, library)
    function = prog.main.functions[0]
    hwd = library.get(function.hwd)
    reference = load_reference(CORPUS_FOLDER / name / "reference.py")
    _, args = make_inputs(reference, sizes, seed=1)
    trace = Tracer(prog, hwd).run(function, args)
    checked = pipeline.check(prog, library)
    return build_facts(function, checked, hwd), trace, analyse(function, checked, hwd, sizes), args


def _check_warps(facts: Any, trace: Any, messages: list[Message]) -> list[str]:
    """Per access site, the worst warp and loop iteration of the trace's first block
    against the `uncoalesced` (global) and `bank-conflict` (shared) messages."""
    problems = []
    for access in facts.accesses:
        if access.space not in ("global", "shared"):
            continue
        text, mode = print_expr(access.node), access.mode[0]
        kind = "load" if mode == "r" else "store"
        warps = warp_addresses(trace, facts, text, mode, by_iteration=True)
        if not warps:
            continue
        if access.space == "shared":
            degree, lanes = max((conflict_degree(a), len(a)) for a in warps.values())
            found = find_message(messages, "bank-conflict", f"{kind} of {text} ")
            got = None if found is None else (numeric_values(found)["conflict_degree"],
                                              numeric_values(found)["active_lanes"])
            if got != (None if degree == 1 else (degree, lanes)):
                problems.append(f"{kind} of {text}: degree {degree} of {lanes} lanes "
                                f"traced, reported {got}")
            continue
        worst = max(warps.values(),
                    key=lambda a: count_lines(a, SECTOR) - least_lines(a, SECTOR))
        lines, minimum = count_lines(worst, SECTOR), least_lines(worst, SECTOR)
        found = find_message(messages, "uncoalesced", f"{kind} of {text} ")
        got = None if found is None else (numeric_values(found)["lines"],
                                          numeric_values(found)["minimum_lines"])
        if got != (None if lines == minimum else (lines, minimum)):
            problems.append(f"{kind} of {text}: {lines} sectors for {minimum} traced, "
                            f"reported {got}")
    return problems


@pytest.mark.parametrize("n", [2048, 1500])
def test_scan_counts_and_warps_match_the_trace(n: int, library: Any) -> None:
    sizes = {"n": n}
    facts, trace, messages, _ = _traced("scan", sizes, library)
    assert oracle.check_executions(facts, trace, sizes) == []
    assert oracle.check_data_accesses(facts, trace, sizes) == []
    assert _check_warps(facts, trace, messages) == []
    # every step reads the element s (2 s) before: consecutive words, no conflict
    assert [m for m in messages if m.code == "bank-conflict"] == []
    # `k >= s` splits warp 0 in the steps s < 32 (s = 1: 31 lanes add, 1 copies)
    split = sorted(len(a) for (warp, _), a in warp_addresses(
        trace, facts, "buf[0][k - s]", "r", by_iteration=True).items() if warp == 0)
    line = next(n for n, text in enumerate(path("scan").read_text().splitlines(), 1)
                if "if (k >= s)" in text)
    (divergent,) = [m for m in messages if m.code == "divergence" and m.span.line == line]
    v = numeric_values(divergent)
    assert v["lanes_then"] + v["lanes_else"] == 32 and v["lanes_then"] in split


@pytest.mark.slow  # (a trace of two rows: 4 s)
def test_softmax_trees_diverge_in_their_last_steps(library: Any) -> None:
    """`if (tid < half)` in the trees of softmax: every lane of warp 0 adds while half
    >= 32, and from half = 16 on only the lanes below half do (warps 1 .. 7 none). The
    brute-force trace counts, per step, the lanes of each warp that read the upper half;
    each of the four branches reports those steps and the lane slots left idle."""
    facts, trace, messages, _ = _traced("softmax", {"rows": 2, "m": 300}, library)
    lines = path("softmax").read_text().splitlines()
    reads = [n for n, text in enumerate(lines, 1) if "other = red[tid + half];" in text]
    branches = [n for n, text in enumerate(lines, 1) if "if (tid < half)" in text]
    assert len(reads) == 2 and len(branches) == 4
    for read in reads:
        steps = warp_addresses(trace, facts, "red[tid + half]", "r", by_iteration=True,
                               line=read)
        halves = sorted({half for _, (half,) in steps}, reverse=True)
        split = {half: [len(a) for (_, (h,)), a in steps.items() if h == half
                        and 0 < len(a) < 32] for half in halves}
        divergent = [h for h in halves if split[h]]
        # (warp 0's lanes: all 32 read while half >= 32; below, half of them)
        assert divergent == [16, 8, 4, 2, 1] and [split[h] for h in divergent] == [
            [16], [8], [4], [2], [1]]
        idle = sum(32 - n for h in divergent for n in split[h])
        for branch in branches:
            (m,) = [m for m in messages if m.code == "divergence" and m.span.line == branch]
            v = numeric_values(m)
            assert (v["divergent_iterations"], v["iterations"], v["idle_lanes"]) == (
                len(divergent), len(halves), idle)
            assert "(half = 16, 8, 4, 2, 1)" in m.text


@pytest.mark.parametrize(("h", "w"), [(16, 64), (19, 45)])
def test_stencil_counts_and_warps_match_the_trace(h: int, w: int, library: Any) -> None:
    sizes = {"h": h, "w": w}
    facts, trace, messages, _ = _traced("stencil", sizes, library)
    assert oracle.check_executions(facts, trace, sizes) == []
    assert oracle.check_data_accesses(facts, trace, sizes) == []
    assert _check_warps(facts, trace, messages) == []
    # the tile is 34 words wide: its rows and the single-lane halo columns conflict-free
    assert [m for m in messages if m.code == "bank-conflict"] == []
