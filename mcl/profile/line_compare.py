"""The feedback's figures for single accesses and branches held against the counters of
their MCPL line (mcl.profile.source_lines). A line the feedback says nothing about is
compared too where the counters show a problem there: a miss of the analysis is what the
comparison is for.

- coalescing: the excess of a warp's accesses, measured as sectors over the ideal sectors
  for the addresses of its active lanes (1: coalesced); the feedback's `uncoalesced`
  states lines where minimum_lines would do. Lines and sectors differ in size, so the
  verdicts are compared: excess on the device exactly where the feedback reports one.
- bank conflicts: wavefronts over ideal wavefronts (1: none) against the degree of the
  `bank-conflict` message, or 1 where there is none.
- divergence: a line with divergent branches against a `divergence` message there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mcl.profile.prediction import AccessPrediction, Prediction
from mcl.profile.source_lines import LineCounters

EXCESS = 1.10  # measured/ideal above this is a real excess, not rounding at the edges


@dataclass(frozen=True)
class LineFigure:
    line: int
    kind: str  # "coalescing", "bank-conflicts" or "divergence"
    predicted: float | None
    measured: float | None
    ok: bool
    reason: str | None
    message: str | None  # the feedback's message at the line, where there is one


def compare_lines(p: Prediction, lines: dict[int, LineCounters]) -> list[LineFigure]:
    rows = (_per_line("coalescing", p.sectors_per_request, lines, _excess, _coalescing)
            + _per_line("bank-conflicts", p.conflict_degree, lines,
                        lambda c: c.conflict_degree, _conflicts)
            + _per_line("divergence", p.branch_efficiency, lines,
                        lambda c: c.values.get("divergent_branches", 0.0), _divergence))
    return sorted(rows, key=lambda r: (r.line, r.kind))


# A verdict: the predicted figure, whether the line agrees, and why not; None where there
# is nothing to compare on the line.
Verdict = tuple[float | None, bool, str | None] | None


def _per_line(kind: str, flagged: list[AccessPrediction], lines: dict[int, LineCounters],
              measure: Callable[[LineCounters], float | None],
              judge: Callable[[AccessPrediction | None, float | None], Verdict]
              ) -> list[LineFigure]:
    """One row per line the feedback names or the counters measure, judged by `judge`."""
    named = {a.line: a for a in flagged}
    rows = []
    for number in sorted(set(named) | set(lines)):
        counters = lines.get(number)
        measured = measure(counters) if counters is not None else None
        access = named.get(number)
        verdict = judge(access, measured)
        if verdict is not None:
            predicted, ok, reason = verdict
            rows.append(LineFigure(number, kind, predicted, measured, ok, reason,
                                   access.text if access is not None else None))
    return rows


def _excess(c: LineCounters) -> float | None:
    return c.ratio("global_sectors", "global_sectors_ideal")


def _coalescing(access: AccessPrediction | None, measured: float | None) -> Verdict:
    """Sectors over ideal sectors (1: coalesced) against the feedback's verdict: a flagged
    access must show an excess, an unflagged one none. The feedback counts lines where the
    hardware counts sectors, so only the verdict is held to, not the size of the excess;
    the row shows the feedback's lines over minimum lines beside the measured excess."""
    if measured is None and access is None:
        return None
    predicted = access.excess if access is not None else 1.0
    if measured is not None and access is not None and measured <= EXCESS:
        return predicted, False, "the access is coalesced on the device"
    if measured is not None and access is None and measured > EXCESS:
        return predicted, False, "uncoalesced access the feedback did not report"
    return predicted, True, None


def _conflicts(access: AccessPrediction | None, measured: float | None) -> Verdict:
    if measured is None and access is None:
        return None
    predicted = access.value if access is not None else 1.0
    if measured is not None and measured > predicted * EXCESS:
        return predicted, False, ("bank conflict the feedback did not report"
                                  if access is None else
                                  "a worse conflict than the feedback reports")
    if measured is not None and predicted > 1 and measured < EXCESS:
        return predicted, False, "the predicted conflict did not happen on the device"
    return predicted, True, None


def _divergence(access: AccessPrediction | None, measured: float | None) -> Verdict:
    if not measured and access is None:
        return None
    predicted = access.value if access is not None else None
    if measured is None or bool(measured) == (access is not None):
        return predicted, True, None
    return predicted, False, (
        "divergent branches the feedback did not report (a guard, or a loop whose trip "
        "count differs between lanes)" if access is None else
        "the predicted divergence did not happen on the device")
