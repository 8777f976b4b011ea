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

from dataclasses import dataclass

from mcl.profile.prediction import Prediction
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
    rows = _coalescing(p, lines) + _conflicts(p, lines) + _divergence(p, lines)
    return sorted(rows, key=lambda r: (r.line, r.kind))


def _coalescing(p: Prediction, lines: dict[int, LineCounters]) -> list[LineFigure]:
    """Sectors over ideal sectors (1: coalesced) against the feedback's verdict: a flagged
    access must show an excess, an unflagged one none. The feedback counts lines where the
    hardware counts sectors, so only the verdict is held to, not the size of the excess;
    the row shows the feedback's lines over minimum lines beside the measured excess."""
    flagged = {a.line: a for a in p.sectors_per_request}
    rows = []
    for number in sorted(set(flagged) | set(lines)):
        counters = lines.get(number)
        measured = counters.ratio("global_sectors", "global_sectors_ideal") if counters \
            else None
        access = flagged.get(number)
        if measured is None and access is None:
            continue
        predicted = access.excess if access is not None else 1.0
        if measured is None:
            ok, reason = True, None
        elif access is not None and measured <= EXCESS:
            ok, reason = False, "the access is coalesced on the device"
        elif access is None and measured > EXCESS:
            ok, reason = False, "uncoalesced access the feedback did not report"
        else:
            ok, reason = True, None
        rows.append(LineFigure(number, "coalescing", predicted, measured, ok, reason,
                               access.text if access is not None else None))
    return rows


def _conflicts(p: Prediction, lines: dict[int, LineCounters]) -> list[LineFigure]:
    flagged = {a.line: a for a in p.conflict_degree}
    rows = []
    for number in sorted(set(flagged) | set(lines)):
        counters = lines.get(number)
        measured = counters.conflict_degree if counters else None
        access = flagged.get(number)
        predicted = access.value if access is not None else 1.0
        if measured is None and access is None:
            continue
        if measured is None:
            ok, reason = True, None
        elif measured > predicted * EXCESS:
            ok, reason = False, ("bank conflict the feedback did not report" if access is None
                                 else "a worse conflict than the feedback reports")
        elif predicted > 1 and measured < EXCESS:
            ok, reason = False, "the predicted conflict did not happen on the device"
        else:
            ok, reason = True, None
        rows.append(LineFigure(number, "bank-conflicts", predicted, measured, ok, reason,
                               access.text if access is not None else None))
    return rows


def _divergence(p: Prediction, lines: dict[int, LineCounters]) -> list[LineFigure]:
    flagged = {a.line: a for a in p.branch_efficiency}
    rows = []
    for number in sorted(set(flagged) | set(lines)):
        counters = lines.get(number)
        measured = counters.values.get("divergent_branches", 0.0) if counters else None
        access = flagged.get(number)
        if not measured and access is None:
            continue
        ok = bool(measured) == (access is not None) or measured is None
        reason = None
        if not ok:
            reason = ("divergent branches the feedback did not report (a guard, or a loop "
                      "whose trip count differs between lanes)" if access is None else
                      "the predicted divergence did not happen on the device")
        rows.append(LineFigure(number, "divergence",
                               access.value if access is not None else None, measured, ok,
                               reason, access.text if access is not None else None))
    return rows
