"""Per-line verdicts (mcl.profile.line_compare): the feedback's access and branch figures
against the source counters of their line, both ways."""

from __future__ import annotations

from mcl.profile.line_compare import compare_lines
from mcl.profile.prediction import AccessPrediction, Prediction
from mcl.profile.source_lines import LineCounters


def line(number: int, **values: float) -> LineCounters:
    return LineCounters("k.mcpl", number, dict(values))


def rows(p: Prediction, *counters: LineCounters) -> dict[tuple[int, str], object]:
    return {(r.line, r.kind): r for r in compare_lines(p, {c.line: c for c in counters})}


def test_coalescing_verdicts_both_ways() -> None:
    strided = AccessPrediction(12, "b[j, i] is not coalesced", 32.0, excess=32.0)
    p = Prediction("f", sectors_per_request=[strided])
    found = rows(p,
                 line(12, global_sectors=400, global_sectors_ideal=100),  # agrees
                 line(13, global_sectors=100, global_sectors_ideal=100),  # agrees
                 line(14, global_sectors=120, global_sectors_ideal=100))  # missed
    assert found[(12, "coalescing")].ok and found[(12, "coalescing")].predicted == 32.0
    assert found[(12, "coalescing")].measured == 4.0
    assert found[(13, "coalescing")].ok
    assert not found[(14, "coalescing")].ok
    assert found[(14, "coalescing")].reason == (
        "uncoalesced access the feedback did not report")
    coalesced_after_all = rows(p, line(12, global_sectors=100, global_sectors_ideal=100))
    assert coalesced_after_all[(12, "coalescing")].reason == (
        "the access is coalesced on the device")


def test_bank_conflicts() -> None:
    p = Prediction("f", conflict_degree=[AccessPrediction(20, "32-way", 32.0)])
    found = rows(p, line(20, shared_wavefronts=3200, shared_wavefronts_ideal=100),
                 line(21, shared_wavefronts=200, shared_wavefronts_ideal=100),
                 line(22, shared_wavefronts=100, shared_wavefronts_ideal=100))
    assert found[(20, "bank-conflicts")].ok
    assert found[(21, "bank-conflicts")].reason == (
        "bank conflict the feedback did not report")
    assert found[(22, "bank-conflicts")].ok
    absent = rows(p, line(20, shared_wavefronts=100, shared_wavefronts_ideal=100))
    assert absent[(20, "bank-conflicts")].reason == (
        "the predicted conflict did not happen on the device")


def test_divergence_and_quiet_lines() -> None:
    p = Prediction("f", branch_efficiency=[AccessPrediction(30, "divergent", 50.0)])
    found = rows(p, line(30, divergent_branches=12), line(31, divergent_branches=5),
                 line(32, instructions=100))
    assert found[(30, "divergence")].ok
    assert not found[(31, "divergence")].ok
    assert not any(number == 32 for number, _ in found)  # nothing to compare there
    missed = rows(p, line(30, instructions=10))
    assert missed[(30, "divergence")].reason == (
        "the predicted divergence did not happen on the device")
