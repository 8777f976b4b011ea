"""Tables of docs/ that scripts make from raw benchmark results, never typed by hand: a
block `<!-- MARKER: FILE ... -->` … `<!-- end MARKER -->` in a document holds the table of
the files its first line names (benchmarks/cpu_table.py, benchmarks/table4.py)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path

Table = Callable[[list[str]], str]


def refresh(document: str, marker: str, table: Table) -> str:
    """`document` with each `marker` block made again from the files it names."""
    block = re.compile(rf"<!-- {marker}: (?P<files>[^>]*?) -->\n.*?<!-- end {marker} -->",
                       re.DOTALL)

    def made(match: re.Match[str]) -> str:
        return (f"<!-- {marker}: {match['files']} -->\n{table(match['files'].split())}\n"
                f"<!-- end {marker} -->")

    return block.sub(made, document)


def main(argv: list[str] | None, description: str, marker: str, producer: str,
         table: Table) -> int:
    """Print the table of the files named, or refresh a document's `marker` blocks."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("files", nargs="*", help=f"{producer} JSON files (from the "
                        "repository root)")
    parser.add_argument("--write", metavar="DOC", help=f"refresh the {marker} blocks of DOC")
    args = parser.parse_args(argv)
    if args.write:
        path = Path(args.write)
        path.write_text(refresh(path.read_text(encoding="utf-8"), marker, table),
                        encoding="utf-8")
        return 0
    if not args.files:
        parser.error("name the JSON files, or --write DOC")
    print(table(args.files))
    return 0
