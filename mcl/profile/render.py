"""The text form of `mcl profile`: one table of figures (predicted, measured, their
relative error, a flag), then the reason for each flag and the suggestions with their
estimated gains. Narrow enough for 80 columns: the reasons go below the table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcl.styled import text_console


def quantity(value: float | None, unit: str) -> str:
    """A figure in the unit a programmer reads it in."""
    if value is None:
        return "-"
    if unit == "s":
        for scale, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
            if abs(value) >= scale or name == "us":
                return f"{value / scale:.3g} {name}"
    if unit == "B":
        for scale, name in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
            if abs(value) >= scale:
                return f"{value / scale:.3g} {name}"
        return f"{value:.0f} B"
    if unit == "%":
        return f"{value:.1f}%"
    text = f"{value:.3g}" if value != int(value) else f"{int(value):,}"
    return f"{text} {unit}".strip() if unit in ("way",) else text


def render(document: Mapping[str, Any], console: Any = None) -> None:
    from rich.table import Table

    console = console or text_console()
    sizes = " ".join(f"{k}={v}" for k, v in document["sizes"].items())
    names = ", ".join(sorted({k["name"] for k in document["kernels"]}))
    table = Table(title=f"{document['function']} at {document['target']} ({sizes}): "
                  f"feedback vs Nsight Compute", title_justify="left")
    for column, justify in (("figure", "left"), ("predicted", "right"),
                            ("measured", "right"), ("error", "right"), ("", "left")):
        # rich wants a Literal of its justifications; the tuple's strings are among them
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    reasons: list[str] = []
    for f in document["figures"]:
        error = f"{100 * f['error']:+.0f}%" if f["error"] is not None else ""
        flag = ""
        if f["ok"] is False:
            reasons.append(f"{f['title']}: {f['reason']} (tolerance: {f['tolerance']})")
            flag = f"[bold red]![{len(reasons)}][/]"
        elif f["ok"]:
            flag = "[green]ok[/]"
        title = f["title"] + (f" [dim]({f['note']})[/]" if f["note"] else "")
        table.add_row(title, quantity(f["predicted"], f["unit"]),
                      quantity(f["measured"], f["unit"]), error, flag)
    console.print(table)
    console.print(f"kernels measured: {names}")
    for number, reason in enumerate(reasons, 1):
        console.print(f"[bold red]![{number}][/] {reason}")
    if not reasons:
        console.print("every compared figure is within its tolerance")
    rows = document["per_line"]
    if rows:
        console.print(line_table(rows))
    for s in document["suggestions"]:
        gain = (f"estimated gain {s['estimated_gain']:.2f}x (the model's "
                f"{s['estimated_seconds_after'] * 1e6:.1f} us after the change)"
                if s["estimated_gain"] and s.get("estimated_seconds_after")
                else "no estimated gain stated")
        console.print(f"  suggestion at line {s['line']} ({s['code']}): {gain}")


# What the two numbers of a per-line row are, by kind (mcl.profile.line_compare).
LINE_UNITS = {"coalescing": "over ideal", "bank-conflicts": "way",
              "divergence": "lanes % / branches"}


def line_table(rows: list[Mapping[str, Any]]) -> Any:
    """Per MCPL line: the feedback's figure, the counters', a flag with its reason."""
    from rich.table import Table

    table = Table(title="per MCPL line (Nsight Compute source counters)",
                  title_justify="left")
    for column, justify in (("line", "right"), ("figure", "left"), ("predicted", "right"),
                            ("measured", "right"), ("", "left")):
        # rich wants a Literal of its justifications; the tuple's strings are among them
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for r in rows:
        flag = "[green]ok[/]" if r["ok"] else f"[bold red]![/] {r['reason']}"
        table.add_row(str(r["line"]), f"{r['kind']} [dim]({LINE_UNITS[r['kind']]})[/]",
                      quantity(r["predicted"], ""), quantity(r["measured"], ""), flag)
    return table


def steps_table(steps: Sequence[Mapping[str, Any]]) -> Any:
    """The steps of a series (mcl.profile.series) as a rich table."""
    from rich.table import Table

    from mcl.profile.series import suggestions_text

    table = Table(title="series steps: measured gain beside the suggestions followed",
                  title_justify="left")
    for column, justify in (("step", "left"), ("before -> after", "right"),
                            ("gain", "right"), ("suggestions before (estimated gain)", "left")):
        # rich wants a Literal of its justifications; the tuple's strings are among them
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for s in steps:
        t0, t1 = s["seconds"]
        table.add_row(s["step"], f"{quantity(t0, 's')} -> {quantity(t1, 's')}",
                      f"{s['measured_gain']:.2f}x" if s["measured_gain"] else "-",
                      suggestions_text(s))
    return table
