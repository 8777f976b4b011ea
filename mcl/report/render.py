"""Rendering the table: rich for the terminal, Markdown for documents (docs/tutorial.md),
JSON for tools (mcl/schemas/report.schema.json)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcl.report.measure import Measurement
from mcl.report.rows import Row
from mcl.tables import print_table

HEADERS = ("version", "level", "change compared to the previous version", "feedback")


def _cells(row: Row, measurement: Measurement | None, measured: bool,
           feedback_cell: Callable[[list[str]], str]) -> list[str]:
    feedback = list(row.shown)
    if row.problem:
        feedback.append(f"(no feedback: {row.problem})")
    cells = [row.name, row.level or "?", row.spec.change, feedback_cell(feedback)]
    if measured:
        cells.append(measurement.text if measurement else "")
    return cells


def render_rich(title: str, rows: list[Row], measurements: Mapping[str, Measurement],
                measured: bool, console: Any, peers: Mapping[str, Any] | None = None) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, show_lines=True, expand=True)
    table.add_column(HEADERS[0], style="bold", no_wrap=True)
    table.add_column(HEADERS[1], style="cyan", no_wrap=True)
    # min_width: the narrowest these prose columns stay readable at (mcl.tables)
    table.add_column(HEADERS[2], ratio=2, min_width=24)
    table.add_column(HEADERS[3], ratio=4, min_width=40)
    if measured:
        table.add_column("performance", justify="right", min_width=24)
    branch = None
    for row in rows:
        if row.spec.branch != branch:
            branch = row.spec.branch
            if branch:  # a series without branches has no section rows
                table.add_row(Text(branch, style="bold magenta"),
                              *([""] * (len(table.columns) - 1)))
        cells = _cells(row, measurements.get(row.name), measured,
                       lambda lines: "\n".join(f"• {line}" for line in lines))
        table.add_row(*(Text(c) for c in cells))
    print_table(console, table)
    for line in _peer_lines(peers):
        console.print(line)


def render_markdown(title: str, rows: list[Row], measurements: Mapping[str, Measurement],
                    measured: bool, peers: Mapping[str, Any] | None = None) -> str:
    headers = [*HEADERS, *(["performance"] if measured else [])]
    out = [f"**{_escape(title)}**", "", "| " + " | ".join(headers) + " |",
           "|" + "---|" * len(headers)]
    branch = None
    for row in rows:
        if row.spec.branch != branch:
            branch = row.spec.branch
            out.append(f"| **{_escape(branch)}** |" + " |" * (len(headers) - 1))
        cells = _cells(row, measurements.get(row.name), measured,
                       lambda lines: "<br>".join(f"• {_escape(line)}" for line in lines))
        cells = [cells[0], cells[1], _escape(cells[2]), cells[3], *map(_escape, cells[4:])]
        out.append("| " + " | ".join(cells) + " |")
    lines = _peer_lines(peers)
    return "\n".join(out + ([""] + lines if lines else [])) + "\n"


def _peer_lines(peers: Mapping[str, Any] | None) -> list[str]:
    return [f"peer, measured in the same run: {name}: {p.text}"
            for name, p in (peers or {}).items()]


def _escape(text: str) -> str:
    """Markdown table cells: no raw pipes, no line breaks, no stray emphasis markers."""
    return text.replace("|", "\\|").replace("\n", " ").replace("*", "\\*")


def render_json(title: str, values: Mapping[str, Any], rows: list[Row],
                measurements: Mapping[str, Measurement],
                peers: Mapping[str, Any] | None = None) -> str:
    import json
    from dataclasses import asdict

    from mcl.schemas import SCHEMA_VERSION

    document = {
        "schema_version": SCHEMA_VERSION, "title": title, "values": dict(values),
        "rows": [{
            "name": row.name, "level": row.level, "branch": row.spec.branch,
            "translated": row.spec.translated, "change": row.spec.change,
            "feedback": list(row.shown), "unchanged": list(row.unchanged),
            "codes": [m.code for m in row.messages],
            "problem": row.problem,
            "performance": asdict(measurements[row.name]) if row.name in measurements else None,
        } for row in rows],
        "peers": {name: asdict(p) for name, p in (peers or {}).items()},
    }
    return json.dumps(document, indent=2) + "\n"
