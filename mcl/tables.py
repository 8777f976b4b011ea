"""Every table mcl prints goes through `print_table`, so none is ever cut
(docs/user-guide.md, "Reading the output at any width").

A table is printed as a table when it fits the console: each column at its natural width,
or, for a column that wraps well (prose, formulas), at the `min_width` it declares as
still readable. Otherwise it is printed as one block per row — the first cell as a
heading, then `header: value` lines wrapped to the width — so an 80-column terminal
gets every word instead of `chan…` columns. Cells never end in an ellipsis: long words
(formulas, paths) fold onto the next line.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Column, Table
from rich.text import Text

# What one column costs besides its text: a space of padding either side and a rule.
_COLUMN_CHROME = 3


def _plain(cell: Any) -> str:
    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):
        return Text.from_markup(cell).plain
    return str(cell)


def _natural(cell: Any) -> int:
    return max((len(line) for line in _plain(cell).splitlines()), default=0)


def cells(table: Table) -> list[list[str]]:
    """The plain text of every body cell, row by row."""
    columns = [[_plain(c) for c in column._cells] for column in table.columns]
    return [list(row) for row in zip(*columns, strict=True)] if columns else []


def fits(table: Table, width: int) -> bool:
    """Whether `table` can be printed at `width` columns with no column narrower than
    its natural width or its declared readable `min_width`."""
    needed = 1 + sum(_readable_width(column) + _COLUMN_CHROME for column in table.columns)
    return needed <= width


def _natural_width(column: Column, whole_header: bool = False) -> int:
    """The widest cell of `column`; of its header, unless `whole_header`, only the longest
    word, since a header can wrap at its spaces ("max abs / err")."""
    header = _plain(column.header)
    head = len(header) if whole_header else max((len(w) for w in header.split()), default=0)
    return max([head, *(_natural(c) for c in column._cells)])


def _readable_width(column: Column) -> int:
    natural = _natural_width(column)
    return min(natural, column.min_width) if column.min_width else natural


def print_table(console: Console, table: Table) -> None:
    """`table` as a table when it fits `console`, else as one block per row."""
    for column in table.columns:
        column.overflow = "fold"
        column.no_wrap = False
    if fits(table, console.width):
        fixed = [c for c in table.columns if not c.min_width and not c.ratio]
        # headers on one line when that fits too
        whole = 1 + sum(_natural_width(c, whole_header=True) + _COLUMN_CHROME
                        for c in fixed) + sum(_readable_width(c) + _COLUMN_CHROME
                                              for c in table.columns if c not in fixed)
        for column in fixed:
            # its natural width, so that rich narrows only the columns that wrap well
            column.width = _natural_width(column, whole_header=whole <= console.width)
        console.print(table)
    else:
        print_blocks(console, table)


def print_blocks(console: Console, table: Table) -> None:
    """One block per row: the first cell as a heading, then the other non-empty cells as
    `header: value`, wrapped to the console with their continuation lines indented; a row
    with only a first cell (a section, as the report's branches) is a heading of its own."""
    if table.title:
        console.print(Text(_plain(table.title), style="bold"), overflow="fold")
    headers = [_plain(c.header) for c in table.columns]
    for column_cells in zip(*(column._cells for column in table.columns), strict=True):
        heading = _plain(column_cells[0]).strip()
        rest = [_plain(c).strip() for c in column_cells[1:]]
        if not any(rest):
            if heading:
                console.print(Text(f"── {heading} ──", style="bold magenta"), overflow="fold")
            continue
        console.print(Text(f"{headers[0]}: {heading}", style="bold"), overflow="fold")
        for header, text in zip(headers[1:], rest, strict=True):
            if not text:
                continue
            lines = text.splitlines()
            if len(lines) == 1:
                _indented(console, f"{header}: {text}", 2)
            else:
                _indented(console, f"{header}:", 2)
                for line in lines:
                    _indented(console, line, 4)
    if table.caption:
        console.print(Text(_plain(table.caption)), overflow="fold")


def _indented(console: Console, text: str, indent: int) -> None:
    """`text` wrapped to the console, every line `indent` columns in; long words fold."""
    console.print(Padding(Text(text, overflow="fold"), (0, 0, 0, indent), expand=False))
