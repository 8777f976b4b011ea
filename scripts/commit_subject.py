#!/usr/bin/env python3
"""The commit convention of CONTRIBUTING.md ("Commits"), as a commit-msg hook: the subject
is at most 72 characters and, where the message goes on, a blank line separates it from
the body that holds the details.

    python scripts/commit_subject.py MESSAGE_FILE      exit 1, saying why, when it is not

`.pre-commit-config.yaml` runs it on each commit once installed for that stage
(`pre-commit install --hook-type commit-msg`); `git log --format=%s | awk 'length > 72'`
lists the older subjects that break it.
"""

from __future__ import annotations

import sys
from pathlib import Path

LONGEST_SUBJECT = 72


def problems(message: str) -> list[str]:
    """What is wrong with commit message `message` (git's comment lines left out)."""
    lines = [line for line in message.splitlines() if not line.startswith("#")]
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines or not lines[0].strip():
        return ["the message has no subject"]
    found = []
    if len(lines[0]) > LONGEST_SUBJECT:
        found.append(f"the subject has {len(lines[0])} characters, more than "
                     f"{LONGEST_SUBJECT}: put the details in the body")
    if len(lines) > 1 and lines[1].strip():
        found.append("the second line is not blank: one blank line goes between the "
                     "subject and the body")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} MESSAGE_FILE", file=sys.stderr)
        return 2
    found = problems(Path(argv[1]).read_text(encoding="utf-8"))
    for problem in found:
        print(f"commit message: {problem} (CONTRIBUTING.md, \"Commits\")", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
