"""The steps of a refinement series under the profiler: for each version and the one
made from it, the measured gain (kernel time before over after), the roofline bound of
each, and the suggestions the version before carried with the gain each message states.
That is where a suggestion's promise meets its result (docs/profile.md, "A series")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _figure(document: Mapping[str, Any], kind: str, side: str) -> float | None:
    found = [f[side] for f in document.get("figures", []) if f["kind"] == kind]
    return found[0] if found else None


def steps(versions: Sequence[tuple[str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """One step per consecutive pair of (name, `mcl profile` document)."""
    found = []
    for (name0, before), (name1, after) in zip(versions, versions[1:], strict=False):
        t0 = _figure(before, "time-bound", "measured")
        t1 = _figure(after, "time-bound", "measured")
        found.append({
            "step": f"{name0} -> {name1}",
            "seconds": [t0, t1], "measured_gain": t0 / t1 if t0 and t1 else None,
            "bounds": [_figure(before, "time-bound", "predicted"),
                       _figure(after, "time-bound", "predicted")],
            "suggestions": [{"line": s["line"], "code": s["code"],
                             "estimated_gain": s["estimated_gain"]}
                            for s in before.get("suggestions", [])],
        })
    return found


def steps_table(found: list[dict[str, Any]]) -> str:
    """The steps as a Markdown table."""
    lines = ["| step | measured before -> after | measured gain | suggestions before "
             "(estimated gain) |", "|---|---|---:|---|"]
    for s in found:
        t0, t1 = s["seconds"]
        times = f"{t0 * 1e6:.1f} -> {t1 * 1e6:.1f} us" if t0 and t1 else "-"
        gain = f"{s['measured_gain']:.2f}x" if s["measured_gain"] else "-"
        lines.append(f"| {s['step']} | {times} | {gain} | {suggestions_text(s)} |")
    return "\n".join(lines)


def suggestions_text(step: Mapping[str, Any]) -> str:
    """The suggestions before a step, each with the gain its message estimates."""
    return ", ".join(f"{x['code']} (line {x['line']}: "
                     + (f"{x['estimated_gain']:.2f}x" if x["estimated_gain"]
                        else "none stated") + ")" for x in step["suggestions"]) or "none"
