"""What a new user reads in the first hour matches the tool: the README's command table
names every command (and `run`'s row says verification needs --verify), the README and
the user guide install the same way, the documented exit statuses are the real ones,
and `mcl check`'s summary does not contradict the feedback above it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcl.cli import COMMANDS, main
from mcl.resources import kernels_dir

# These tests read messages and rows whole, one to a line.
pytestmark = pytest.mark.usefixtures("whole_lines")

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
GUIDE = (ROOT / "docs" / "user-guide.md").read_text(encoding="utf-8")


def _command_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| `mcl ")]


@pytest.mark.parametrize("doc", ["README.md", "docs/user-guide.md"])
def test_the_command_tables_name_every_command(doc: str) -> None:
    rows = _command_rows(README if doc == "README.md" else GUIDE)
    named = {m.group(1) for row in rows for m in re.finditer(r"`mcl ([a-z]+)", row)}
    commands = set(COMMANDS)
    assert commands <= named, f"{doc} misses {sorted(commands - named)}"


def test_the_readme_run_row_says_verification_needs_verify() -> None:
    (row,) = [r for r in _command_rows(README)
              if r.startswith("| `mcl run K.mcpl --target LEAF [--verify]`")]
    assert "--verify" in row


def test_one_install_command() -> None:
    def installs(text: str) -> set[str]:
        return {m.group(0) for m in re.finditer(r"pip install -e \S+", text)}

    assert installs(README) == installs(GUIDE) == {"pip install -e ."}


def test_exit_statuses_are_as_documented(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    assert "1 errors in the input" in " ".join(README.split())
    assert "2 a command line mcl cannot read" in " ".join(README.split())
    bad = tmp_path / "bad.mcpl"
    bad.write_text("perfect void f( {\n")
    assert main(["check", str(bad)]) == 1  # an error in the input
    with pytest.raises(SystemExit) as usage:
        main(["check", "--no-such-option"])  # a command line mcl cannot read
    assert usage.value.code == 2
    capsys.readouterr()


def test_check_summary_counts_the_feedback_warnings_apart(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCL_FEEDBACK_BUDGET", "60")
    kernel = str(kernels_dir() / "matmul" / "x86_avx512_v3.mcpl")
    assert main(["check", kernel, "-D", "n=2048", "-D", "m=2048", "-D", "p=2048"]) == 0
    out = capsys.readouterr().out
    opening = re.search(r"\): (\d+) warnings?,", out)
    assert opening, out[:300]
    warnings = int(opening.group(1))
    assert warnings >= 1
    word = "warning" if warnings == 1 else "warnings"
    assert out.rstrip().endswith(
        f"x86_avx512_v3.mcpl: 0 errors, 0 warnings (and {warnings} feedback {word} above)")


def test_the_interpreter_guide_shows_what_run_prints(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/interpreter.md quotes a whole `mcl run --interp` (table included); only the
    time on its first line may differ."""
    text = (ROOT / "docs" / "interpreter.md").read_text(encoding="utf-8")
    command = "$ mcl run kernels/matmul/perfect.mcpl --interp -D n=13\n"
    quoted = text[text.index(command) + len(command):].split("```", 1)[0].splitlines()
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["run", str(kernels_dir() / "matmul" / "perfect.mcpl"), "--interp",
                 "-D", "n=13"]) == 0
    printed = [line.rstrip() for line in capsys.readouterr().out.splitlines()]

    def timeless(line: str) -> str:
        return re.sub(r"interpreter, [\d.]+ ms", "interpreter, T ms", line)

    assert [timeless(line) for line in printed] == [timeless(line) for line in quoted], (
        "docs/interpreter.md's `mcl run --interp` example is stale: paste the output of "
        "`COLUMNS=100 mcl run kernels/matmul/perfect.mcpl --interp -D n=13`")
