"""What the reliability tests share: a kernel written to a file and `mcl check` (or
another command) run on it in this process, its output captured."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from mcl.cli import main


def write_source(folder: Path, source: str, name: str = "k.mcpl") -> Path:
    path = folder / name
    path.write_text(source, encoding="utf-8")
    return path


def check_text(folder: Path, source: str, capsys: pytest.CaptureFixture[str],
               args: Sequence[str] = ()) -> str:
    """What `mcl check ARGS` prints for `source`, standard output and error together."""
    main(["check", *args, str(write_source(folder, source))])
    captured = capsys.readouterr()
    return captured.out + captured.err


def run_json(folder: Path, capsys: pytest.CaptureFixture[str], source: str,
             args: Sequence[str] = (), command: str = "check") -> tuple[int, dict, str]:
    """`mcl COMMAND --format json ARGS` on `source`: the exit status, the JSON document
    (empty where the command printed none) and the standard error."""
    code = main([command, "--format", "json", *args, str(write_source(folder, source))])
    captured = capsys.readouterr()
    doc = json.loads(captured.out) if captured.out.strip().startswith("{") else {}
    return code, doc, captured.err
