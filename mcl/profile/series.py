"""The steps of a refinement series under the profiler: for each version and the one
made from it, the measured gain (kernel time before over after), the roofline bound and
the time model's estimate of each, the gain the model predicts (its estimate before over
its estimate after), and the suggestions the version before carried with the gain each
message states. That is where a suggestion's promise meets its result (docs/profile.md,
"A series")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _figure(document: Mapping[str, Any], kind: str, side: str) -> float | None:
    found = [f[side] for f in document.get("figures", []) if f["kind"] == kind]
    return found[0] if found else None


def ratio(before: float | None, after: float | None) -> float | None:
    return before / after if before and after else None


def steps(versions: Sequence[tuple[str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """One step per consecutive pair of (name, `mcl profile` document)."""
    found = []
    for (name0, before), (name1, after) in zip(versions, versions[1:], strict=False):
        t0 = _figure(before, "time-bound", "measured")
        t1 = _figure(after, "time-bound", "measured")
        e0 = _figure(before, "time-estimate", "predicted")
        e1 = _figure(after, "time-estimate", "predicted")
        found.append({
            "step": f"{name0} -> {name1}",
            "seconds": [t0, t1], "measured_gain": ratio(t0, t1),
            "bounds": [_figure(before, "time-bound", "predicted"),
                       _figure(after, "time-bound", "predicted")],
            "estimates": [e0, e1], "estimated_gain": ratio(e0, e1),
            "suggestions": [{"line": s["line"], "code": s["code"],
                             "estimated_gain": s["estimated_gain"]}
                            for s in before.get("suggestions", [])],
        })
    return found


def seconds_pair_text(pair: Sequence[float | None] | None) -> str:
    """`before -> after` in microseconds, or `-` where either is unknown."""
    a, b = pair or (None, None)
    return f"{a * 1e6:.1f} -> {b * 1e6:.1f} us" if a and b else "-"


def gain_text(x: float | None) -> str:
    """A speed-up factor as `1.23x`, or `-` where none is known."""
    return f"{x:.2f}x" if x else "-"


def steps_table(found: list[dict[str, Any]]) -> str:
    """The steps as a Markdown table: measured and estimated gain side by side."""
    lines = ["| step | measured before -> after | measured gain | model estimate before -> "
             "after | estimated gain | suggestions before (estimated gain) |",
             "|---|---|---:|---|---:|---|"]
    for s in found:
        lines.append(f"| {s['step']} | {seconds_pair_text(s['seconds'])} | "
                     f"{gain_text(s['measured_gain'])} | "
                     f"{seconds_pair_text(s.get('estimates'))} | "
                     f"{gain_text(s.get('estimated_gain'))} | {suggestions_text(s)} |")
    return "\n".join(lines)


def suggestions_text(step: Mapping[str, Any]) -> str:
    """The suggestions before a step, each with the gain its message estimates."""
    return ", ".join(f"{x['code']} (line {x['line']}: "
                     + (f"{x['estimated_gain']:.2f}x" if x["estimated_gain"]
                        else "none stated") + ")" for x in step["suggestions"]) or "none"
