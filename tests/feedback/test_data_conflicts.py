"""Bank conflicts of shared accesses whose index the data decide
(mcl.feedback.data_conflicts): a histogram's `atomicAdd(lh[bin], 1)`. Held against the
brute-force trace (every request of every warp of every block, with the reference's
inputs), the exact expectation where it has a closed form, and Nsight Compute's recorded
wavefronts of the unseen corpus's histogram on an H100."""

from __future__ import annotations

import sys
import tarfile
from collections import defaultdict
from fractions import Fraction
from math import comb, factorial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sympy

from mcl import pipeline
from mcl.feedback.data_conflicts import DataIndex, _sampled_request, data_request
from mcl.feedback.facts.kernel import build_facts
from mcl.feedback.findings import BankConflictFinding, WarpAccessUnknown
from mcl.feedback.messages import FeedbackSeverity
from mcl.feedback.registry import analyse_findings
from mcl.hdl.library import default_library
from mcl.mcpl.loader import load_program
from mcl.profile.source_lines import parse_source_csv

ROOT = Path(__file__).resolve().parents[2]
for _path in (ROOT, ROOT / "tests" / "feedback"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from brute import Tracer  # noqa: E402
from warp_trace import conflict_degree  # noqa: E402

from benchmarks.unseen_counts import trip_keys  # noqa: E402

CORPUS = ROOT / "benchmarks" / "unseen_corpus"
RECORDED = ROOT / "benchmarks" / "results" / "2026-12-06-h100-unseen-held-out.tar.gz"
HISTOGRAM = CORPUS / "histogram_locals" / "hopper.mcpl"
WARP, WORD = 32, 4


def _program(path: Path, bins: int | None = None) -> tuple[Any, Any, Any]:
    """The program of `path`, or of the histogram with `bins` bins written to `path`."""
    if bins is not None:
        source = HISTOGRAM.read_text().replace("NR_BINS = 64", f"NR_BINS = {bins}")
        path.write_text(source.replace("v[i] * 64.0", f"v[i] * {bins}.0"))
    library = default_library()
    program = load_program(path, (), library)
    return program, program.main.functions[0], library


def _findings(path: Path, sizes: dict[str, int], bins: int | None = None
              ) -> list[BankConflictFinding]:
    program, function, library = _program(path, bins)
    findings = analyse_findings(function, pipeline.check(program, library),
                                library.get(function.hwd), sizes, only=["functions"])
    assert not [f for f in findings if isinstance(f, WarpAccessUnknown)]
    return [f for f in findings if isinstance(f, BankConflictFinding)]


def _traced_requests(path: Path, n: int, bins: int | None = None) -> list[int]:
    """The conflict degree (most distinct words in one bank) of every warp request of
    `lh[bin]` over every block, with values spread evenly over [0, 1)."""
    program, function, library = _program(path, bins)
    hwd = library.get(function.hwd)
    rng = np.random.default_rng(1)
    v = ((rng.integers(0, 1024, n) + 0.25) / 1024.0).astype(np.float32)
    args = {"n": n, "hist": np.zeros(bins or 64, dtype=np.int32), "v": v}
    trace = Tracer(program, hwd).run(function, args)
    facts = build_facts(function, pipeline.check(program, library), hwd)
    access = next(a for a in facts.accesses
                  if a.space == "shared" and a.node.span.line == 29 and "w" in a.mode)
    loops = {id(x.node): x for x in facts.loops}
    by_warp: dict[tuple[int, ...], list[tuple[int, tuple[int, ...], int]]] = defaultdict(list)
    for k, (slot_number, index, values) in enumerate(trace.log):
        slot = trace.slots[slot_number]
        if slot.node != id(access.node) or "w" not in slot.mode:
            continue
        at = {loops[x].group: v for x, v in zip(slot.loops, values, strict=True)
              if loops[x].kind == "foreach"}
        iteration = tuple(v for x, v in zip(slot.loops, values, strict=True)
                          if loops[x].kind != "foreach")
        address = int(np.ravel_multi_index(index, trace.memory[k][0].shape)) * WORD
        lane = at["warps"] * WARP + at["threads"]
        by_warp[(at["blocks"], lane // WARP)].append((lane, iteration, address))
    degrees = []
    for entries in by_warp.values():
        requests: dict[tuple[int, ...], list[int]] = defaultdict(list)
        for key, (_, _, address) in zip(trip_keys(entries), entries, strict=True):
            requests[key].append(address)
        degrees += [conflict_degree(a) for a in requests.values()]
    return degrees


def test_sixty_four_bins_against_the_trace(tmp_path) -> None:
    """64 bins: two words in each bank, so at most 2-way, and 2-way in every traced
    request (a conflict-free one has about 7 chances in 10,000). The load and the store
    of the atomic each state it, with the expected wavefronts per request."""
    traced = _traced_requests(HISTOGRAM, 4096)
    findings = _findings(HISTOGRAM, {"n": 4096})
    assert len(traced) == 128 and len(findings) == 2
    for finding in findings:
        assert finding.conflict.degree == max(traced) == 2
        assert finding.conflict.line_wavefronts == pytest.approx(np.mean(traced), rel=0.01)
        assert "the data deciding which of 64 elements" in finding.message.text


def test_two_hundred_fifty_six_bins_against_the_trace(tmp_path) -> None:
    """256 bins: eight words a bank, so up to 8-way, and on average about 3.1 wavefronts:
    the mean over 512 traced requests within 3% (its standard error is about 1.5%), the
    worst the trace saw no more than the bound."""
    path = tmp_path / "hist256.mcpl"
    traced = _traced_requests(path, 16384, bins=256)
    findings = _findings(path, {"n": 16384}, bins=256)
    assert len(traced) == 512 and findings
    for finding in findings:
        assert finding.conflict.degree == 8 >= max(traced)
        assert finding.conflict.line_wavefronts == pytest.approx(np.mean(traced), rel=0.03)
        assert finding.conflict.line_wavefronts < 4  # the bound is no estimate


def _exact_two_words_a_bank() -> float:
    """2 minus the chance that no bank gets both of its words, 32 lanes over 64 words:
    over the number U of banks the lanes use, each used bank has 1 of its 2 words, so
    P = E[2^U] / 2^32 (Stirling numbers count the maps onto U banks)."""
    chance = sum(Fraction(comb(32, u) * factorial(u) * int(sympy.functions.combinatorial
                                                           .numbers.stirling(32, u)))
                 * 2 ** u for u in range(1, 33)) / Fraction(64 ** 32)
    return float(2 - chance)


def test_the_expectation_against_its_closed_form() -> None:
    exact = _exact_two_words_a_bank()
    assert exact == pytest.approx(1.99932, abs=1e-5)
    request = data_request([0] * 32, DataIndex(0, ((1, 64),)), 4, WORD, 32)
    assert request.wavefronts == pytest.approx(exact, abs=0.002)
    assert request.worst.degree == 2


def test_rows_of_a_two_dimensional_array_and_a_bound_past_the_lanes() -> None:
    """lh[w, bin] of a per-warp copy, rows of 64 words: the row moves every lane alike.
    1024 words a bank can reach: the bound is the 32 lanes, not the 32 words a bank."""
    row = data_request([3 * 64 * 4] * 32, DataIndex(0, ((1, 64),)), 4, WORD, 32)
    assert row.worst.degree == 2 and row.wavefronts == pytest.approx(2.0, abs=0.002)
    wide = data_request([0] * 32, DataIndex(0, ((1, 1024),)), 4, WORD, 32)
    assert wide.worst.degree == 32 and 3 < wide.wavefronts < 4
    few = data_request([0] * 8, DataIndex(0, ((1, 1024),)), 4, WORD, 32)
    assert few.worst.degree == 8


def test_a_request_asked_again_is_the_one_drawn_before() -> None:
    """The editor's worker asks for the same requests at every edit: they are drawn once,
    and a request that differs in any of its numbers is drawn anew."""
    _sampled_request.cache_clear()
    first = data_request([0] * 32, DataIndex(0, ((1, 64),)), 4, WORD, 32)
    again = data_request([0] * 32, DataIndex(sympy.Symbol("x"), ((1, 64),)), 4, WORD, 32)
    assert again == first and _sampled_request.cache_info().hits == 1
    other = data_request([4] + [0] * 31, DataIndex(0, ((1, 64),)), 4, WORD, 32)
    rows = data_request([0] * 32, DataIndex(0, ((2, 64),)), 4, WORD, 32)
    assert _sampled_request.cache_info().hits == 1 and rows != first
    assert other.wavefronts != first.wavefronts


def test_the_recorded_line_of_the_histogram_on_an_h100() -> None:
    """Nsight Compute's `L1 Wavefronts Shared` over its ideal at line 29 (1.9993: 4,192,825
    wavefronts for 2,097,152 requests) against the line figure at the profiled size."""
    with tarfile.open(RECORDED) as archive:
        member = archive.extractfile("run/histogram_locals.source.csv")
        assert member is not None
        counters = parse_source_csv(member.read().decode())
    measured = next(c.conflict_degree for (_, line), c in counters.items() if line == 29)
    assert measured == pytest.approx(1.9993, abs=1e-4)
    findings = _findings(HISTOGRAM, {"n": 67108864})
    assert findings
    for finding in findings:
        assert finding.conflict.line_wavefronts == pytest.approx(measured, rel=0.01)


def test_a_conflict_the_data_decide_is_a_fact_without_a_gain() -> None:
    """No padding moves lanes the data place: the finding is info, and the time model,
    which costs its wavefronts, states no gain for it."""
    program, function, library = _program(HISTOGRAM)
    findings = analyse_findings(function, pipeline.check(program, library),
                                library.get(function.hwd), {"n": 67108864})
    conflicts = [f for f in findings if isinstance(f, BankConflictFinding)]
    assert len(conflicts) == 2
    for finding in conflicts:
        assert finding.severity == FeedbackSeverity.INFO and finding.gain is None
        assert finding.conflict.data_spread == 64
        assert "padding the array does not move" in (finding.message.hint or "")
