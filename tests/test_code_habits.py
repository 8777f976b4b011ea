"""Habits of the code that a reader relies on: comments and messages cite the paper's
sections and the docs, never the project's issue numbers (an issue is closed and gone; the
reason it gave belongs in the comment or in docs/)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ISSUE = re.compile(r"\b[Ii]ssues? \d+")


def test_no_issue_numbers_in_the_compiler_or_its_descriptions() -> None:
    cited = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for folder in ("mcl", "hwdescs")
        for path in sorted((ROOT / folder).rglob("*"))
        if path.suffix in {".py", ".tx", ".hdl", ".toml", ".json"}
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ISSUE.search(line)
    ]
    assert cited == []
