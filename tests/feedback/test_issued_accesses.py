"""Which shared accesses the compiler issues as written, as one 64-bit pair, or not at all
(mcl.feedback.issued_accesses), and the per-line figure the bank-conflict findings carry
from it, held against Nsight Compute's recorded per-line wavefronts of the unseen
corpus's work-efficient scans on an H100 (benchmarks/results/2026-12-06-h100-unseen-
held-out.tar.gz, each line's `L1 Wavefronts Shared` over its ideal)."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from mcl import pipeline
from mcl.feedback.facts.kernel import build_facts
from mcl.feedback.findings import BankConflictFinding
from mcl.feedback.issued_accesses import reloaded, twins
from mcl.feedback.kernel_api import Kernel
from mcl.feedback.lockstep import fill_loops
from mcl.feedback.registry import analyse_findings
from mcl.hdl.library import default_library
from mcl.mcpl.loader import load_program
from mcl.profile.source_lines import parse_source_csv

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "benchmarks" / "results" / "2026-12-06-h100-unseen-held-out.tar.gz"
CORPUS = ROOT / "benchmarks" / "unseen_corpus"


def _source_page(kernel: str) -> dict[int, float]:
    """Nsight Compute's wavefronts over their ideal, per line with shared accesses."""
    with tarfile.open(RECORDED) as archive:
        member = archive.extractfile(f"run/{kernel}.source.csv")
        assert member is not None
        text = member.read().decode()
    return {line: c.conflict_degree for (_, line), c in parse_source_csv(text).items()
            if c.conflict_degree is not None}


def _line_figures(path: Path, sizes: dict[str, int]) -> dict[int, float]:
    library = default_library()
    program = load_program(path, (), library)
    function = program.main.functions[0]
    findings = analyse_findings(function, pipeline.check(program, library),
                                library.get(function.hwd), sizes, only=["functions"])
    figures: dict[int, float] = {}
    for f in findings:
        if isinstance(f, BankConflictFinding) and f.span is not None:
            assert f.conflict.line_wavefronts is not None
            figures[f.span.line] = f.conflict.line_wavefronts
    return figures


@pytest.mark.parametrize("kernel", ["scan_blelloch", "scan_blelloch_race"])
def test_line_figures_match_the_recorded_wavefronts_of_a_work_efficient_scan(kernel):
    """Every shared line of the scan within 1% of ncu's wavefronts over the ideal: the
    sweeps' levels 2- to 16-way, and at off = 1 the loads of `temp[ai]`, `temp[bi]` one
    64-bit load at the first load's line, the down-sweep's two stores one 64-bit store at
    the last store's line, and `temp[bi] += carry` loading nothing (its element was loaded
    on the line before). Without the pairs and the reload, the three down-sweep lines
    were 4.75 against 3.39, 6.58 and 3.39."""
    measured = _source_page(kernel)
    # (the figures are per block: a small grid gives the same)
    predicted = _line_figures(CORPUS / kernel / "hopper.mcpl", {"n": 4096})
    assert set(predicted) == {line for line, m in measured.items() if m > 1.0}
    for line, figure in predicted.items():
        assert figure == pytest.approx(measured[line], rel=0.01), line
    assert max(measured.values()) > 6  # (the down-sweep's `temp[ai] = temp[bi]`)


SWAP = """
hopper void swap(int n, global float[n, 512] a) {
  foreach (int b in n blocks) {
    shared float[512] s;
    foreach (int t in 256 threads) {
      s[2 * t] = a[b, 2 * t];
      s[2 * t + 1] = a[b, 2 * t + 1];
      for (int k = 0; k < 4; k++) {
        barrier(shared);
        if (t < 64) {
          int lo = (k + 1) * t;
          int hi = lo + k + 1;
          float x = s[lo];
          s[lo] = s[hi];BETWEEN
          s[hi] += x;
        }
      }
      barrier(shared);
      a[b, 2 * t] = s[2 * t];
    }
  }
}
"""


def _kernel(tmp_path: Path, between: str = "") -> Kernel:
    path = tmp_path / "swap.mcpl"
    path.write_text(SWAP.replace("BETWEEN", f"\n          {between}" if between else ""))
    library = default_library()
    program = load_program(path, (), library)
    function = program.main.functions[0]
    hwd = library.get(function.hwd)
    return Kernel(build_facts(function, pipeline.check(program, library), hwd), {"n": 2})


def _site(kernel: Kernel, kind: str, text: str, line: int):
    return next(i for i in kernel.instructions if i.kind == kind and i.text == text
                and i.span is not None and i.span.line == line)


@pytest.mark.parametrize(("between", "again"), [
    ("", True),                # only s[lo] is written between, and lo is never hi (k + 1 > 0)
    ("s[hi + 1] = x;", True),  # a constant word away: never the element
    ("s[hi - k] = x;", False),  # lo + 1: hi itself where k = 0
    ("s[t] = x;", False),      # a unit's own word: not decided by the loop alone
])
def test_a_load_of_an_element_loaded_before_is_not_issued_again(tmp_path, between, again):
    kernel = _kernel(tmp_path, between)
    second = _site(kernel, "load", "s[hi]", 16 if between else 15)
    assert reloaded(kernel, second, fill_loops(kernel, second)) is again
    first = _site(kernel, "load", "s[hi]", 14)
    assert not reloaded(kernel, first, fill_loops(kernel, first))


def test_twins_pair_in_the_iterations_where_they_are_one_word_apart(tmp_path):
    """`s[lo]` and `s[hi]` are k + 1 words apart: one word at k = 0 only; of two loads
    the earlier issues the pair, of two stores the later; the reloaded `s[hi]` pairs with
    nothing."""
    kernel = _kernel(tmp_path)
    load_lo, load_hi = _site(kernel, "load", "s[lo]", 13), _site(kernel, "load", "s[hi]", 14)
    store_lo, store_hi = (_site(kernel, "store", "s[lo]", 14),
                          _site(kernel, "store", "s[hi]", 15))
    found = twins(kernel, load_lo, fill_loops(kernel, load_lo))
    assert [(t.other, t.carries) for t in found] == [(load_hi, True)]
    loop = next(x for x in kernel.facts.loops if x.name == "k")
    offsets = []
    for k in range(4):
        kernel.evaluator.set_position(loop, k)
        offsets.append(found[0].offset(kernel))
    kernel.evaluator.set_position(loop, 0)
    assert offsets == [0, None, None, None]
    assert [(t.other, t.carries) for t in twins(kernel, store_lo, fill_loops(kernel, store_lo))
            ] == [(store_hi, False)]
    assert [(t.other, t.carries) for t in twins(kernel, store_hi, fill_loops(kernel, store_hi))
            ] == [(store_lo, True)]
