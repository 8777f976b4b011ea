"""The commit convention (CONTRIBUTING.md, "Commits"): scripts/commit_subject.py, the
commit-msg hook of .pre-commit-config.yaml, accepts a subject of at most 72 characters
followed by a blank line and the body, and says what is wrong with any other message."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("commit_subject",
                                                  ROOT / "scripts" / "commit_subject.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_short_subject_and_a_body_after_a_blank_line_pass() -> None:
    problems = _script().problems
    assert problems("Fix the checker's folding of min\n") == []
    assert problems("x" * 72 + "\n\nWhy, and what was measured.\n# a git comment\n") == []


def test_a_long_subject_a_missing_blank_line_and_no_subject_are_reported() -> None:
    problems = _script().problems
    assert problems("x" * 73) == [
        "the subject has 73 characters, more than 72: put the details in the body"]
    assert problems("Fix it\nand more on the second line\n") == [
        "the second line is not blank: one blank line goes between the subject and the body"]
    assert problems("# only git's comments\n\n") == ["the message has no subject"]


def test_the_hook_reads_the_message_file(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    main = _script().main
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.write_text("Add a test\n\nThe details.\n")
    bad.write_text("y" * 100 + "\n")
    assert main(["commit_subject.py", str(good)]) == 0
    assert main(["commit_subject.py", str(bad)]) == 1
    assert "100 characters" in capsys.readouterr().err


def test_the_convention_is_stated_and_the_hook_installed() -> None:
    assert "at most 72 characters" in (ROOT / "CONTRIBUTING.md").read_text()
    config = (ROOT / ".pre-commit-config.yaml").read_text()
    assert "entry: python scripts/commit_subject.py" in config
    assert "stages: [commit-msg]" in config
